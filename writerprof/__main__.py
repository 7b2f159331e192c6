import sys

from writerprof.cli import main

sys.exit(main())
