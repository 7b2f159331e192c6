"""python burn_beside.py CPUS CMD...: CMD run beside a process that burns a
CPU, both pinned to CPUS (the kernel's list, as taskset takes it); exits
with CMD's status once the burner is gone."""

import subprocess
import sys

from writerprof.units import parse_cpu_list

BURN = "import os, sys\nos.sched_setaffinity(0, {cpus})\nwhile True:\n    pass\n"

cpus = set(parse_cpu_list(sys.argv[1]))
burner = subprocess.Popen([sys.executable, "-c", BURN.format(cpus=sorted(cpus))])
try:
    status = subprocess.run(sys.argv[2:]).returncode
finally:
    burner.kill()
    burner.wait()
sys.exit(status)
