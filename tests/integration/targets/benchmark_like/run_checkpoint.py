"""The benchmark's checkpoint structure under its real module names (the
stand-in package beside this script): SAVES saves of CHUNKS chunks through
4 buffers and a queue of 4. Writes each save's own timings as JSON.

    python run_checkpoint.py METHOD OUT_DIR RESULTS_JSON
"""

import json
import os
import sys

from mlpstorage_py.checkpointing.streaming_checkpoint import StreamingCheckpointing

CHUNK = 1 << 20
BUFFERS = 4
CHUNKS = 12
SAVES = 2

if __name__ == "__main__":
    method, out_dir, results_path = sys.argv[1:4]
    checkpoint = StreamingCheckpointing(CHUNK, BUFFERS, method)
    with open(os.path.join(out_dir, "manifest"), "wb") as f:  # before the saves (see the file writer's header)
        os.write(f.fileno(), json.dumps({"saves": SAVES, "chunks": CHUNKS}).encode())
    saves = [checkpoint.save(os.path.join(out_dir, "ckpt-%d" % i), CHUNKS * CHUNK) for i in range(SAVES)]
    with open(results_path, "w") as f:
        json.dump(saves, f)
    sys.exit(max(s["exitcode"] for s in saves))
