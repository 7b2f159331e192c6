"""What the recording says it missed reaches the report, and a command line
with a newline or a stray byte reads back on one line in every output."""

from __future__ import annotations

import json
import sys

from helpers import run_writerprof


def test_an_unmatched_probe_and_an_odd_argument_in_every_report(tmp_path):
    run = tmp_path / "run"
    run_writerprof("record", "--no-stacks", "--probe", "nosuchmodule:fill=gen", "-o", run, "--",
                   sys.executable, "-c", "import sys", "line 1\nline 2")
    text = run_writerprof("report", run).stdout
    header = text.split("\n\n")[0].splitlines()
    assert "  command   " + sys.executable + " -c 'import sys' $'line 1\\nline 2'" in header
    assert any("--probe nosuchmodule:fill=gen matched nothing" in line for line in header)
    summary = json.loads(run_writerprof("report", run, "--json").stdout)
    assert summary["run"]["probes_unmatched"] == {"nosuchmodule:fill=gen": "no process imported nosuchmodule"}
    assert summary["run"]["command"][-1] == "line 1\nline 2"  # JSON keeps the argument as it was
    run_writerprof("report", run, "--html", tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert "$&#x27;line 1\\nline 2&#x27;" in page and "nosuchmodule:fill=gen matched nothing" in page
