"""python -m preloaded DIR SAVES [CHUNKS] (see the package)."""

import sys

from preloaded import main

main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 8)
