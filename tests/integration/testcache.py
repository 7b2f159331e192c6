"""Where the tests keep what they install once (the speedscope app, the Open
MPI environment): WRITERPROF_TEST_CACHE, or ~/.cache/writerprof-tests."""

from __future__ import annotations

import os
from pathlib import Path

CACHE = Path(os.environ.get("WRITERPROF_TEST_CACHE") or Path.home() / ".cache" / "writerprof-tests")
