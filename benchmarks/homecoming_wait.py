"""How long `record` waits after CMD's end for the other hosts' parts to come home.

    python benchmarks/homecoming_wait.py [--recordings 5]

On the test suite's multi-host rig (tests/integration/rig.py: each host a
set of Linux namespaces of this machine, with its own /tmp; needs root,
unshare, nsenter and ip), records the reproducer under MPICH's Hydra (the
mpiexec beside this interpreter: the mpich wheel) on two hosts of two ranks
each, the launcher's host running none, into a node-local run directory,
--recordings times. Prints each recording's wait (run.json's
`homecoming.waited_s`: from CMD's end to the last part merged), the parts'
bytes, and the median and worst.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))

from rig import Rig  # noqa: E402

BIN = Path(sys.executable).parent
REPRO = ["repro", "--saves", "2", "--size", "16MiB", "--chunk-size", "4MiB"]


def one(rig: Rig, index: int) -> dict:
    run_dir = f"/tmp/homecoming-{index}"  # the launcher's; each host has a /tmp of its own
    done = rig.run([BIN / "writerprof", "record", "-o", run_dir, "--", BIN / "mpiexec", "-launcher", "ssh",
                    "-launcher-exec", rig.ssh, "-hosts", "node1:2,node2:2", "-n", "4", BIN / "writerprof", *REPRO])
    if done.returncode != 0:
        sys.exit(f"record exited {done.returncode}:\n{done.stderr[-3000:]}")
    meta = json.loads((rig.path(rig.launcher, run_dir) / "run.json").read_text())
    return meta["homecoming"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recordings", type=int, default=5)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("homecoming_wait.py: the rig's namespaces need root")
    waits = []
    with tempfile.TemporaryDirectory(prefix="writerprof-homecoming-") as work, Rig(Path(work), ["node1", "node2"]) as rig:
        for i in range(args.recordings):
            outcome = one(rig, i + 1)
            waits.append(outcome["waited_s"])
            home = ", ".join("%s (%.1f MiB)" % (h, p["bytes"] / 2**20) for h, p in sorted(outcome["home"].items()))
            print(f"recording {i + 1}: waited {outcome['waited_s']:.3f} s after CMD's end "
                  f"(record blocked {outcome['blocked_s']:.3f} s); came home: {home or 'none'}; "
                  f"missing: {', '.join(sorted(outcome['missing'])) or 'none'}", flush=True)
    print(f"homecoming wait over {len(waits)} recordings (Hydra, 2 hosts x 2 ranks): median "
          f"{statistics.median(waits):.3f} s, worst {max(waits):.3f} s; load average {os.getloadavg()[0]:.2f}, "
          f"{os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
