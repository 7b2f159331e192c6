"""Recording: what `writerprof record` runs while CMD does, and nothing the
analysis needs (it reads only what was recorded, through writerprof.run).

  session   the recording session: CMD started and followed, the run directory finished
  sampler   the /proc sampler of CMD's processes (a thread of the launcher, or of an agent)
  agent     a host's sampler agent, on hosts other than the launcher's
  pyspy     py-spy following CMD's process tree for Python stacks
  ptrace    which py-spy, and whether it may read CMD's memory here
  rawstacks py-spy's raw files once written: whole lines, gzipped, command lines redacted
  procfs    parsers and readers of another process's /proc files
  topology  the host's NUMA nodes and CPUs from sysfs (the snapshot in topology.json)
  system    the one layer through which sysfs and procfs are read (a fixture tree in tests)
"""
