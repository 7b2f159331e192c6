"""torch.save from a writer child (--method), to a path: PyTorch's C++ stream
writer, not Python's file object. Prints each file's path and pid as JSON."""

import json
import multiprocessing
import os
import sys


def save(path, results):
    import torch

    torch.save({"weights": torch.ones(3 << 20, dtype=torch.float32)}, path)  # 12 MiB
    results.put({"path": path, "pid": os.getpid()})


if __name__ == "__main__":
    out, method = sys.argv[1], sys.argv[2]
    ctx = multiprocessing.get_context(method)
    results = ctx.Queue()
    for i in range(2):
        child = ctx.Process(target=save, args=(os.path.join(out, f"model-{i}.pt"), results))
        child.start()
        print(json.dumps(results.get()), flush=True)
        child.join()
