"""contrast's analysis on synthetic runs: which what-ifs cannot apply, and
the result: each method against the reference, and what each what-if won
back of plain forkserver's loss."""

from __future__ import annotations

import copy

import pytest

from writerprof.analysis import contrast
from writerprof.analysis.summary import summarize
from writerprof.render import html, terminal
from writerprof.run import load
from writerprof.synthetic import Scenario, make_topology, write_run

NODE0 = make_topology()["nodes"]["0"]["cpus"]
# Plain forkserver as the benchmark met it: writers re-run a heavy __main__ and
# inherit the daemon's CPUs (all of them), not their producer's node.
FORKSERVER = dict(start_method="forkserver", main_rerun_s=0.5, producer_cpus=NODE0, writer_cpus_inherited="0-15")
METHODS = ["fork", "forkserver", "forkserver+preload", "forkserver+pin"]


@pytest.fixture(scope="module")
def summaries(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")

    def summary(name, **fields):
        write_run(root / name, Scenario(jitter=0.1, **fields))
        return summarize(load(root / name))

    return {
        "fork": [summary(f"fork{i}", producer_cpus=NODE0, seed=i) for i in (1, 2)],
        "forkserver": [summary(f"forkserver{i}", **FORKSERVER, seed=10 + i) for i in (1, 2)],
        # What the preload what-if does: the same forkserver writers, without the re-run.
        "forkserver+preload": [summary(f"preload{i}", **dict(FORKSERVER, main_rerun_s=0.0), seed=20 + i)
                               for i in (1, 2)],
        "quiet_forkserver": summary("quiet", start_method="forkserver"),
    }


def with_advice(summary, **modules) -> dict:
    """As recorded where the writers' stacks showed costly imports: the re-run's fix with
    these modules (preload=[...], guard=[...]) on its preload and guard actions."""
    ids = {"preload": "forkserver-preload", "guard": "guard-imports"}
    summary = copy.deepcopy(summary)
    for d in summary["diagnoses"]:
        if d["code"] == "main-reimport":
            d["fix"] = [a for a in d["fix"] if a["id"] not in ids.values()] + [
                {"id": ids[kind], "what": f"{kind} {names}", "where": "main.py", "recovery_s": 0.3,
                 "recovery": "estimated", "recovery_ci95_s": None, "measured_by": None, "capped_from_s": None,
                 "modules": list(names)} for kind, names in modules.items()]
    return summary


def without_rerun(summary) -> dict:
    """As it is recorded where the children do not re-run the parent's __main__."""
    summary = copy.deepcopy(summary)
    for save in summary["saves"]:
        save["startup"]["main_rerun"] = 0.0
    return summary


def recordings(summaries, methods) -> list[dict]:
    """As contrast records them: interleaved, repeat by repeat."""
    return [{"method": m, "repeat": i + 1, "path": summaries[m][i]["run"]["path"], "summary": summaries[m][i]}
            for i in range(2) for m in methods]


def mean_save_s(many) -> float:
    saves = [s for summary in many for s in summary["saves"]]
    return sum(s["duration_s"] for s in saves) / len(saves)


def test_both_what_ifs_apply_to_a_forkserver_that_reruns_main_and_diverges(summaries):
    advised = with_advice(summaries["forkserver"][0], preload=["numpy"], guard=["numpy"])
    assert contrast.cannot_apply(advised, METHODS + ["forkserver+guard"]) == {}
    assert contrast.advice(advised) == {"forkserver+preload": ["numpy"], "forkserver+guard": ["numpy"]}


def test_a_what_if_that_runs_the_fix_has_nothing_to_run_where_the_fix_has_no_such_action(summaries):
    # The synthetic runs have no stacks: no import named, so nothing to preload on their Python 3.11.
    plain = summaries["forkserver"][0]
    assert contrast.advice(plain) == {}
    reasons = contrast.cannot_apply(plain, ["fork", "forkserver", "forkserver+preload", "forkserver+guard"])
    assert reasons["forkserver+preload"].startswith("the fix of the forkserver recording advises no "
                                                    "set_forkserver_preload here")
    assert reasons["forkserver+guard"].startswith("the fix of the forkserver recording names no import to move")


def test_a_forkserver_without_rerun_or_divergence_leaves_nothing_to_preload_or_pin(summaries):
    quiet = without_rerun(summaries["quiet_forkserver"])
    reasons = contrast.cannot_apply(quiet, METHODS)
    assert set(reasons) == {"forkserver+preload", "forkserver+pin"}
    assert reasons["forkserver+preload"] == (f"the forkserver writers did not re-run __main__ "
                                             f"(Python {quiet['run']['python'][0]}): nothing to preload away")
    assert "already had their producer's CPUs" in reasons["forkserver+pin"]
    # Only the what-ifs asked for are judged.
    assert contrast.cannot_apply(quiet, ["fork", "forkserver"]) == {}
    assert set(contrast.cannot_apply(quiet, ["fork", "forkserver", "forkserver+pin"])) == {"forkserver+pin"}


def test_a_target_in_main_is_no_reason_not_to_run_the_advice(summaries):
    in_main = with_advice(summaries["forkserver"][0], preload=["numpy"], guard=["numpy"])
    for save in in_main["saves"]:
        save["target"] = "__mp_main__.write_file"
    assert contrast.cannot_apply(in_main, METHODS + ["forkserver+guard"]) == {}


def test_the_result_compares_every_method_run_with_the_reference(summaries):
    methods = ["fork", "forkserver", "forkserver+preload"]
    runs = recordings(summaries, methods)
    result = contrast.result(["cmd", "--x"], methods, 2, runs, {})
    assert result["schema"] == "writerprof.contrast/1" and result["command"] == ["cmd", "--x"]
    assert result["methods"] == methods and result["repeat"] == 2
    assert list(result["comparisons"]) == ["forkserver", "forkserver+preload"]
    plain = result["comparisons"]["forkserver"]
    assert plain["a"]["runs"] == [s["run"]["path"] for s in summaries["fork"]]  # both repeats pooled
    assert plain["difference_s"] == pytest.approx(mean_save_s(summaries["forkserver"]) - mean_save_s(summaries["fork"]))
    assert result["verdict"] == plain["verdict"]
    assert [(r["method"], r["repeat"]) for r in result["runs"]] == [(m, i) for i in (1, 2) for m in methods]
    assert result["runs"][1]["gib_s"] == summaries["forkserver"][0]["throughput"]["gib_s"]


def test_a_what_if_recovers_what_plain_forkserver_lost(summaries):
    methods = ["fork", "forkserver", "forkserver+preload"]
    result = contrast.result(["cmd"], methods, 2, recordings(summaries, methods), {})
    (preload,) = result["what_ifs"]
    assert preload["modules"] is None  # none given: it ran no advice of a fix
    lost = mean_save_s(summaries["forkserver"]) - mean_save_s(summaries["fork"])
    recovered = mean_save_s(summaries["forkserver"]) - mean_save_s(summaries["forkserver+preload"])
    assert preload["method"] == "forkserver+preload" and preload["ran"] and preload["reason"] is None
    assert preload["recovered_s"] == pytest.approx(recovered)
    assert preload["recovered_share"] == pytest.approx(recovered / lost)
    # The re-run was most of the loss (0.5 s per writer, behind a 4-buffer pool).
    assert 0.5 < preload["recovered_share"] <= 1.1
    assert preload["gib_s"] == result["comparisons"]["forkserver+preload"]["throughput"]["b_gib_s"]
    low, high = preload["recovered_ci95_s"]  # plain forkserver's saves against the what-if's
    assert low < recovered < high and low > 0


def test_the_fix_says_which_recovery_a_what_if_measured_and_with_what(summaries):
    methods = ["fork", "forkserver", "forkserver+preload"]
    advised = {m: [with_advice(s, preload=["numpy"]) for s in summaries[m]] for m in methods}
    result = contrast.result(["cmd"], methods, 2, recordings(advised, methods), {},
                             {"forkserver+preload": ["numpy"]})
    (preload,) = result["what_ifs"]
    assert preload["modules"] == ["numpy"]
    fix = {a["id"]: a for a in result["fix"]}
    assert fix["forkserver-preload"]["recovery"] == "measured"
    assert fix["forkserver-preload"]["measured_by"] == "forkserver+preload"
    assert fix["forkserver-preload"]["recovery_ci95_s"] == preload["recovered_ci95_s"]
    assert fix["fork"]["recovery"] == "measured" and fix["fork"]["measured_by"] == "fork"
    assert fix["python-m"]["recovery"] == "estimated"
    difference = result["comparisons"]["forkserver"]["difference_s"]
    assert all(a["recovery_s"] <= difference for a in result["fix"] if a["recovery_s"] is not None)
    # Run with another list than the fix's: not what the fix says, so not its measure.
    other = contrast.result(["cmd"], methods, 2, recordings(advised, methods), {}, {"forkserver+preload": ["six"]})
    assert {a["id"]: a for a in other["fix"]}["forkserver-preload"]["recovery"] == "estimated"


def test_a_skipped_what_if_is_reported_with_its_reason_and_not_compared(summaries):
    methods = METHODS
    runs = recordings(summaries, ["fork", "forkserver", "forkserver+preload"])
    skipped = {"forkserver+pin": "nothing to pin"}
    result = contrast.result(["cmd"], methods, 2, runs, skipped)
    assert "forkserver+pin" not in result["comparisons"]
    pin = next(w for w in result["what_ifs"] if w["method"] == "forkserver+pin")
    assert pin == {"method": "forkserver+pin", "ran": False, "reason": "nothing to pin", "gib_s": None,
                   "recovered_s": None, "recovered_ci95_s": None, "recovered_share": None, "modules": None}
    assert [w["method"] for w in result["what_ifs"]] == ["forkserver+preload", "forkserver+pin"]
    assert result["details"][-1] == {"heading": "Not tested", "lines": ["forkserver+pin: nothing to pin"]}


def test_nothing_is_recovered_without_plain_forkserver_against_another_reference(summaries):
    # forkserver the reference: its loss against itself is no loss.
    methods = ["forkserver", "forkserver+preload"]
    (preload,) = contrast.result(["cmd"], methods, 2, recordings(summaries, methods), {})["what_ifs"]
    assert preload["ran"] and preload["gib_s"] is not None
    assert preload["recovered_s"] is None and preload["recovered_share"] is None
    # No plain forkserver recorded: nothing to measure the what-if against.
    methods = ["fork", "forkserver+preload"]
    (preload,) = contrast.result(["cmd"], methods, 2, recordings(summaries, methods), {})["what_ifs"]
    assert preload["recovered_s"] is None


def test_contrast_text_shows_each_comparison_and_the_what_ifs(summaries, tmp_path):
    runs = recordings(summaries, ["fork", "forkserver", "forkserver+preload"])
    result = contrast.result(["cmd"], METHODS, 2, runs, {"forkserver+pin": "nothing to pin"})
    text = terminal.contrast_text(result, tmp_path / "contrast.html")
    assert "=== fork vs forkserver ===" in text and "=== fork vs forkserver+preload ===" in text
    preload = result["what_ifs"][0]
    low, high = preload["recovered_ci95_s"]
    assert (f"forkserver+preload: recovers {preload['recovered_s']:.3f} s per save (95% interval {low:.3f} to "
            f"{high:.3f} s), {preload['recovered_share']:.0%} of what forkserver lost against fork") in " ".join(
        text.split())
    assert "forkserver+pin: not run: nothing to pin" in text
    assert text.rstrip().endswith(f"Report: {tmp_path / 'contrast.html'}")


def test_a_what_if_whose_interval_holds_no_change_is_no_claim(summaries, tmp_path):
    """A recovery whose 95% interval reaches zero or below is said as one that
    may be none, in the text and in the HTML; one clear of it as recovered."""
    runs = recordings(summaries, ["fork", "forkserver", "forkserver+preload"])
    result = contrast.result(["cmd"], METHODS, 2, runs, {"forkserver+pin": "nothing to pin"})
    clear = result["what_ifs"][0]
    low, high = clear["recovered_ci95_s"]
    assert low > 0
    unclear = copy.deepcopy(result)
    unclear["what_ifs"][0]["recovered_ci95_s"] = [-low, high]
    for shown, says in ((result, "recovers"), (unclear, "may recover")):
        text = " ".join(terminal.contrast_text(shown, tmp_path / "contrast.html").split())
        line = next(line for line in text.split("Report:")[0].split("forkserver+preload: ")[1:] if "per save" in line)
        assert line.startswith(f"{says} {clear['recovered_s']:.3f} s per save")
        assert ("not told apart from none" in line) == (shown is unclear)
        page = html._what_ifs(shown)
        assert ("not told apart from none" in page) == (shown is unclear)
        assert ("maybe " in page) == (shown is unclear)
