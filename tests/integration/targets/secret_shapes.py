"""A command that carries credentials of every shape (tests/unit/
secret_shapes.py) as its arguments after OUT PID_FILE: in its own argv, in
the shell string of a `bash -c` child (whose Python child gets them as argv),
and in a child that outlives it (its pid into PID_FILE). It and its children
spin long enough to be sampled, and it writes a 4 MiB file to OUT."""

import shlex
import subprocess
import sys
import time

SPIN = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 1.0: sum(range(1000))"
OUTLIVE = "import time\ntime.sleep(3)"


def spin(seconds):
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        sum(range(1000))


if __name__ == "__main__":
    out, pid_file, *shapes = sys.argv[1:]
    quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # "; true": bash stays the Python child's parent (no exec of the last command).
    shell = subprocess.Popen(["bash", "-c", shlex.join([sys.executable, "-c", SPIN, *shapes]) + "; true"], **quiet)
    left = subprocess.Popen([sys.executable, "-c", OUTLIVE, *shapes], **quiet)
    with open(pid_file, "w") as f:
        f.write(str(left.pid))
    spin(1.2)
    with open(out, "wb") as f:
        f.write(b"s" * (4 << 20))
    shell.wait()
