from writerprof.cli import entry

entry()
