"""A run's world (analysis.world) and how every output states it: a job
whose ranks are not all in the run says PARTIAL first and names the missing
ranks (report text, JSON, HTML, contrast, record's unprobed-ranks line); a
whole job never does, and a run without ranks says nothing of ranks.
Synthetic runs of 2 ranks a host, split as hosts without a shared run
directory leave them, and merged again."""

from __future__ import annotations

import json
import shutil

import pytest

from writerprof.analysis import contrast
from writerprof.analysis.summary import summarize
from writerprof.record import launchers
from writerprof.render import html, terminal
from writerprof.render import world as world_text
from writerprof.run import load, merge
from writerprof.run.layout import RUN_FILE
from writerprof.synthetic import Scenario, write_run


def _split(root, name: str, hosts: int = 2, ranks_per_host: int = 2, keep: int = 1):
    """(whole run, the launcher's part holding the first `keep` hosts, the part of the rest)."""
    whole, part, rest = root / name, root / f"{name}-launcher", root / f"{name}-rest"
    write_run(whole, Scenario(hosts=hosts, ranks_per_host=ranks_per_host))
    shutil.copytree(whole, part)
    (rest / "hosts").mkdir(parents=True)
    for index in range(keep, hosts):
        shutil.move(part / "hosts" / f"host{index}", rest / "hosts" / f"host{index}")
    return whole, part, rest


def _rewrite_identities(run, change) -> None:
    """Each process event of the run's journals passed through change(data)."""
    for journal in run.glob("hosts/*/procs/*.events.jsonl"):
        lines = [json.loads(line) for line in journal.read_text().splitlines()]
        for data in lines:
            if data.get("kind") == "process":
                change(data)
        journal.write_text("".join(json.dumps(data) + "\n" for data in lines))


def _first_field(text: str) -> str:
    """The report's first header field: the line after its first line (and the path it wraps onto more)."""
    return next(line for line in text.splitlines() if line.startswith("  ") and not line.startswith("   "))


def _set_record_env(run, env: dict) -> None:
    meta = json.loads((run / RUN_FILE).read_text())
    meta["env"] = env
    (run / RUN_FILE).write_text(json.dumps(meta))


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    return _split(tmp_path_factory.mktemp("split"), "run")


@pytest.mark.parametrize("hosts, ranks_per_host", [(1, 2), (2, 2), (3, 1), (8, 8)])
def test_a_whole_job_is_whole_in_every_output(tmp_path, hosts, ranks_per_host):
    write_run(tmp_path / "run", Scenario(hosts=hosts, ranks_per_host=ranks_per_host))
    summary = summarize(load(tmp_path / "run"))
    world, ranks = summary["world"], hosts * ranks_per_host
    assert not world["partial"] and world["missing_ranks"] == [] and world["launched_by"] == []
    assert world["ranks_seen"] == world["ranks_expected"] == ranks and world["launcher"] == "openmpi"
    assert world["hosts"] == [f"host{i}" for i in range(hosts)]
    text = terminal.report_text(summary)
    assert text.startswith("writerprof report /")  # (the path, wrapped where long)
    assert _first_field(text).startswith(f"  world     {ranks} of {ranks} ranks, all recorded; hosts: host0 (rank")
    for shown in (text, html.report_html(summary), json.dumps(summary)):
        assert "PARTIAL" not in shown and '"partial": true' not in shown


def test_a_part_without_the_other_hosts_is_partial_from_its_first_line(split):
    _, part, _ = split
    summary = summarize(load(part))
    world = summary["world"]
    assert world["partial"] and world["missing_ranks"] == [2, 3] and world["launched_by"] == []
    assert (world["ranks_seen"], world["ranks_expected"]) == (2, 4)
    assert world["hosts"] == ["host0"] and world["ranks_by_host"] == {"host0": [0, 1]}
    assert list(summary)[:2] == ["schema", "world"]  # the JSON says it before anything else

    text = terminal.report_text(summary)
    assert text.startswith("writerprof report (PARTIAL job) /")
    assert terminal.report_text(summary, 60).splitlines()[0] == "writerprof report (PARTIAL job)"  # a long path wraps
    lines = text.splitlines()
    at = lines.index(_first_field(text))
    assert lines[at] == "  world     PARTIAL: 2 of 4 ranks recorded; ranks 2-3 missing; hosts seen: host0 (ranks 0-1)"
    assert lines[at + 1].startswith("  the rest  without shared storage each other host keeps its part")
    text = " ".join(" ".join(lines).split())
    assert f"`writerprof merge {part} PART... -o MERGED`" in text
    over = "over the 2 of 4 ranks recorded (PARTIAL: not the job's)"
    # Every figure over the ranks says whose it is: the saves line, the ranks table, the aggregate.
    assert f"(fork; Python 3.11.9); {over}" in text and f"Ranks (2; seconds): {over}" in text
    assert f"rank 0's save time; {over}" in text and f"GiB/s {over}" in text

    page = html.report_html(summary)
    assert "<title>writerprof report" in page and "(PARTIAL job)</title>" in page
    notice = page.index('<div class="notice"><b>PARTIAL: 2 of 4 ranks recorded; ranks 2-3 missing')
    assert notice < page.index("<h2>") and notice < page.index("command")


def test_merged_parts_are_whole_again(split, tmp_path):
    _, part, rest = split
    merged = merge.merge(merge.find_parts([part, rest]), tmp_path / "merged")
    summary = summarize(load(merged))
    assert not summary["world"]["partial"] and summary["world"]["ranks_seen"] == 4
    assert summary["world"]["ranks_by_host"] == {"host0": [0, 1], "host1": [2, 3]}
    assert "PARTIAL" not in terminal.report_text(summary) and launchers.unprobed_ranks(load(merged)) == []


def test_the_unprobed_ranks_line_is_the_worlds(split):
    _, part, _ = split
    (line,) = launchers.unprobed_ranks(load(part))
    assert line.startswith("2 of 4 ranks not probed here (ranks 2-3): a rank on another host needs")


def test_hosts_missing_where_the_launcher_says_how_many(tmp_path):
    _, part, _ = _split(tmp_path, "run", hosts=3, ranks_per_host=1)
    _rewrite_identities(part, lambda d: d["env"].update(OMPI_MCA_orte_num_nodes="3"))
    world = summarize(load(part))["world"]
    assert (world["hosts_expected"], world["missing_hosts"]) == (3, 2) and world["missing_ranks"] == [1, 2]
    assert world["hosts_expected_from"] == "OMPI_MCA_orte_num_nodes"
    assert "2 of 3 hosts missing (by OMPI_MCA_orte_num_nodes; their names not known here)" in (
        world_text.headline(world))


def test_record_inside_one_rank_is_no_partial_job(tmp_path):
    """One record per rank: every rank journaled is record's own, the others are not its to probe.
    A batch script's own rank (another launcher's, or another rank) is no reason to leave any out."""
    _, part, _ = _split(tmp_path, "run", hosts=2, ranks_per_host=1)
    _set_record_env(part, {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"})
    run = load(part)
    world = summarize(run)["world"]
    assert world["inside_rank"] == 0 and not world["partial"] and world["ranks_seen"] == 0
    assert world_text.headline(world) is None and launchers.unprobed_ranks(run) == []
    for own in ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2"}, {"OMPI_COMM_WORLD_RANK": "1"}):
        _set_record_env(part, own)
        world = summarize(load(part))["world"]
        assert world["inside_rank"] is None and world["partial"] and world["missing_ranks"] == [1], own


def test_a_run_without_ranks_says_nothing_of_them_unless_cmd_ran_a_launcher(tmp_path):
    run = tmp_path / "plain"
    write_run(run, Scenario(hosts=1))
    _rewrite_identities(run, lambda d: d.update(rank=None, local_rank=None, world_size=None, source=None))
    summary = summarize(load(run))
    world = summary["world"]
    assert not world["partial"] and world["ranks_expected"] is None and world["ranks_seen"] == 0
    text = terminal.report_text(summary)
    assert _first_field(text).startswith("  command") and "PARTIAL" not in text and "ranks recorded" not in text
    # The sampler saw CMD run mpirun, and no rank came of it here: its ranks are elsewhere.
    sampled = run / "hosts" / "host0" / "sampled.jsonl"
    seen = json.loads(sampled.read_text().splitlines()[0])
    seen.update(pid=999, cmdline=["/usr/bin/mpirun", "-n", "2", "python", "train.py"])
    sampled.write_text(sampled.read_text() + json.dumps(seen) + "\n")
    summary = summarize(load(run))
    assert summary["world"]["partial"] and summary["world"]["launched_by"] == ["mpirun"]
    text = terminal.report_text(summary)
    assert text.startswith("writerprof report (PARTIAL job)")
    assert _first_field(text) == ("  world     PARTIAL: no rank recorded, though CMD ran mpirun; hosts seen: host0 "
                                  "(no rank)")


def test_a_contrast_of_partial_recordings_says_so_first(split, tmp_path):
    whole, part, _ = split
    partial, full = summarize(load(part)), summarize(load(whole))
    runs = [{"method": m, "repeat": 1, "path": str(p), "summary": s}
            for m, p, s in (("fork", whole, full), ("forkserver", part, partial))]
    result = contrast.result(["cmd"], ["fork", "forkserver"], 1, runs, {})
    assert [r["world"]["partial"] for r in result["runs"]] == [False, True]
    text = terminal.contrast_text(result, tmp_path / "contrast.html")
    assert text.startswith("PARTIAL: 1 of 2 recordings lack ranks of the job (forkserver repeat 1: PARTIAL: 2 of 4")
    whole_only = contrast.result(["cmd"], ["fork", "forkserver"], 1, [dict(r, summary=full) for r in runs], {})
    assert terminal.contrast_text(whole_only, tmp_path / "contrast.html").startswith(
        "World: 4 of 4 ranks, all recorded; hosts: host0 (ranks 0-1), host1 (ranks 2-3)\n")
    page = html.contrast_html(result["comparisons"]["forkserver"], {}, {}, contrast=result)
    assert page.index('<p class="notice">PARTIAL: 1 of 2 recordings') < page.index('<div class="verdict"')


def test_many_scattered_missing_ranks_are_cut_short_with_their_count():
    text = world_text.rank_list(list(range(0, 20000, 2)))
    assert text.startswith("ranks 0,2,4,") and text.endswith(",... (10000 in all)") and len(text) < 90
    assert world_text.rank_list([3]) == "rank 3" and world_text.rank_list([0, 1, 2, 7]) == "ranks 0-2,7"
