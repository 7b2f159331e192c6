"""cpu-contention on real recordings, against a baseline this test records
beside them: a producer whose four generator threads and a CPU-burning
sibling share two CPUs with its writers is warned of, naming its threads
that waited and the burner among those that held the CPUs; the same target
alone on those CPUs is not. Three of each, interleaved (the machine's other
load falls on both)."""

from __future__ import annotations

import os
import sys

import pytest

from writerprof.analysis.diagnoses import CONTENTION_SHARE
from writerprof.analysis.summary import summarize
from writerprof.run import load

from helpers import TARGETS, run_writerprof, two_cpus

RECORDINGS = 3


def _repro(cpus: str, *more) -> list[str]:
    return ["writerprof", "repro", "--saves", "3", "--size", "256MiB", "--generator", "random",
            "--pin-parent", cpus, *more]


def _contention(run_dir) -> list[dict]:
    return [d for d in summarize(load(run_dir))["diagnoses"] if d["code"] == "cpu-contention"]


def _burner(run_dir) -> int:
    """The burner's pid, as the sampler saw it start."""
    (pid,) = {r["pid"] for r in load(run_dir).sampled
              if r["kind"] == "seen" and any("while True" in arg for arg in r["cmdline"])}
    return pid


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    cpus = two_cpus()
    work = tmp_path_factory.mktemp("contention")
    runs = {"baseline": [], "oversubscribed": []}
    for i in range(RECORDINGS):
        run_writerprof("record", "-o", work / f"baseline{i}", "--", *_repro(cpus))
        run_writerprof("record", "-o", work / f"oversubscribed{i}", "--", sys.executable,
                       os.path.join(TARGETS, "burn_beside.py"), cpus, *_repro(cpus, "--gen-threads", "4"))
        runs["baseline"].append(work / f"baseline{i}")
        runs["oversubscribed"].append(work / f"oversubscribed{i}")
    return runs


def test_the_oversubscribed_target_is_warned_of_with_who_waited_and_who_held_the_cpus(recorded):
    for run_dir in recorded["oversubscribed"]:
        (found,) = _contention(run_dir)
        evidence = found["evidence"]
        assert found["severity"] == "warning", found["message"]
        assert evidence["share"] >= CONTENTION_SHARE and evidence["own_share"] * evidence["share"] >= CONTENTION_SHARE
        assert found["cost_s"] > 0 and evidence["wait_s_per_save"] > 0
        # The producer's generator threads waited (not its main thread alone), and the burner held the CPUs.
        producer = [w for w in evidence["waited"] if w["side"] == "producer"]
        assert {t for w in producer for t in w["tids"]} - {found["pid"]}, evidence["waited"]
        assert _burner(run_dir) in {pid for h in evidence["held"] for pid in h["pids"]}
        assert f"pid {found['pid']} tid" in found["message"]


def test_the_same_target_alone_is_not(recorded):
    for run_dir in recorded["baseline"]:
        # Other programs on this shared machine may still be named (info), never the target itself.
        assert [d["message"] for d in _contention(run_dir) if d["severity"] == "warning"] == []
