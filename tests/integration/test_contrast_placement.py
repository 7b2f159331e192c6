"""contrast's placement what-ifs on a machine with one NUMA node (this one):
they are offered, reported as not applicable with the reason, and not run;
with nothing left to compare, contrast fails, saying so."""

from __future__ import annotations

import json

import pytest

from writerprof.record.topology import snapshot
from writerprof.run import load

from helpers import run_writerprof, writerprof_command


def test_placement_what_ifs_are_not_run_on_one_node(tmp_path):
    if len(snapshot()["nodes"]) > 1:
        pytest.skip("this host has more than one NUMA node")
    out = tmp_path / "contrast"
    done = run_writerprof("contrast", "--methods", "forkserver,forkserver+local,forkserver+first-touch",
                          "--repeat", "1", "-o", out, "--",
                          *writerprof_command(), "repro", "--saves", "1", "--size", "64MiB", check=False)
    assert done.returncode == 1 and done.stderr.splitlines()[-1].startswith(
        "writerprof contrast: nothing to contrast: no method but the reference applies here"), done.stderr
    result = json.loads((out / "contrast.json").read_text())
    what_ifs = {w["method"]: w for w in result["what_ifs"]}
    for method in ("forkserver+local", "forkserver+first-touch"):
        assert not what_ifs[method]["ran"] and "one NUMA node" in what_ifs[method]["reason"]
        assert f"{method}: not run: this host has one NUMA node" in done.stderr
    assert [r["method"] for r in result["runs"]] == ["forkserver"]  # only the plain one was recorded
    assert result["placement_costs"] == []  # nothing misplaced on one node
    (run,) = [load(r["path"]) for r in result["runs"]]
    assert len(run.events_of("mitigation")) == 0  # the plain recording had no what-if on
