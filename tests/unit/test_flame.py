"""Flamegraphs: layout (widths in proportion to samples, children by name,
deterministic), hover text, SVG well-formed and self-contained, PNG, and the
differential one's widths and colours."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from writerprof.render import flame
from writerprof.run.stacks import UNTOLD, ProcessStacks, from_child_start, read_raw

SVG = "{http://www.w3.org/2000/svg}"
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "stacks" / "forkserver.raw"
COUNTS = {("main (m.py:1)", "write (w.py:5)"): 3, ("main (m.py:1)", "fsync (w.py:9)"): 1, ("import (i.py:2)",): 4}


def _boxes(counts):
    return {b.path: b for b in flame.layout(counts)}


def test_widths_are_in_proportion_to_samples_and_children_sorted():
    boxes = flame.layout(COUNTS)
    assert (boxes[0].name, boxes[0].x, boxes[0].w, boxes[0].a) == ("all", 0.0, 1.0, 8)
    by_path = {b.path: b for b in boxes}
    # Children in name order: "import" before "main", "fsync" before "write".
    assert by_path[("import (i.py:2)",)].x == 0 and by_path[("import (i.py:2)",)].w == 0.5
    assert by_path[("main (m.py:1)",)].x == 0.5 and by_path[("main (m.py:1)",)].w == 0.5
    fsync, write = by_path[("main (m.py:1)", "fsync (w.py:9)")], by_path[("main (m.py:1)", "write (w.py:5)")]
    assert (fsync.x, fsync.w, fsync.depth) == (0.5, 0.125, 2) and (write.x, write.w) == (0.625, 0.375)
    assert by_path[("main (m.py:1)",)].self_a == 0 and write.self_a == 3
    for box in boxes:
        assert box.w == pytest.approx(box.a / 8)


def test_the_layout_does_not_depend_on_the_order_of_the_counts():
    reordered = dict(reversed(list(COUNTS.items())))
    assert flame.layout(reordered) == flame.layout(COUNTS)
    assert flame.flame_svg(reordered, "t") == flame.flame_svg(COUNTS, "t")


def test_hover_text():
    box = _boxes(COUNTS)[("main (m.py:1)", "write (w.py:5)")]
    assert flame.hover_text(box, 8) == "write (w.py:5)\n3 samples (37.5%)"
    assert flame.hover_text(box, 8, rate_hz=100) == "write (w.py:5)\n3 samples (37.5%, 0.03 s)"


def _frames(svg):
    root = ET.fromstring(svg.encode())  # well-formed, or this raises
    assert root.tag == SVG + "svg"
    return [g for g in root.iter(SVG + "g") if g.get("class") == "f"]


def test_svg_is_well_formed_with_a_title_per_frame():
    svg = flame.flame_svg(COUNTS, "a <title> & more", rate_hz=100)
    frames = _frames(svg)
    assert len(frames) == len(flame.layout(COUNTS))
    titles = [g.find(SVG + "title").text for g in frames]
    assert "all\n8 samples (100.0%, 0.08 s)" in titles and "import (i.py:2)\n4 samples (50.0%, 0.04 s)" in titles
    widths = {g.get("data-n"): float(g.find(SVG + "rect").get("width")) + 0.5 for g in frames}
    assert widths["import (i.py:2)"] == pytest.approx(600) and widths["write (w.py:5)"] == pytest.approx(450)
    assert widths["all"] == pytest.approx(1200)
    assert "<script" in svg and "http" not in svg.replace("http://www.w3.org/2000/svg", "")  # self-contained
    # The root at the bottom, a caller below its callees.
    y = {g.get("data-n"): float(g.find(SVG + "rect").get("y")) for g in frames}
    assert y["all"] > y["main (m.py:1)"] > y["write (w.py:5)"]


def test_names_xml_cannot_hold_are_kept_out_of_the_svg():
    svg = flame.flame_svg({("bad\x00name\x1b (a.py:1)", 'q"<&> (b.py:2)'): 1}, "t\x07")
    names = [g.get("data-n") for g in _frames(svg)]
    assert names == ["all", "bad\ufffdname\ufffd (a.py:1)", 'q"<&> (b.py:2)']


def test_frames_too_narrow_to_see_are_left_out():
    counts = {("big (a.py:1)",): 100000, ("tiny (a.py:2)",): 1}
    names = {g.get("data-n") for g in _frames(flame.flame_svg(counts, "t"))}
    assert names == {"all", "big (a.py:1)"}


def test_png():
    data = flame.flame_png(COUNTS, "t", rate_hz=100)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert flame.diff_png(COUNTS, {("import (i.py:2)",): 1}, "d")[:4] == b"\x89PNG"


def test_diff_widths_are_mean_shares_and_colours_signed():
    a = {("x (a.py:1)",): 10, ("y (a.py:2)",): 10}
    b = {("x (a.py:1)",): 30, ("y (a.py:2)",): 10, ("z (a.py:3)",): 40}
    boxes = {box.name: box for box in flame.diff_layout(a, b)}
    assert boxes["x (a.py:1)"].w == pytest.approx((0.5 + 30 / 80) / 2)
    assert boxes["z (a.py:3)"].w == pytest.approx((0 + 0.5) / 2)  # only in B, still seen
    assert (boxes["x (a.py:1)"].a, boxes["x (a.py:1)"].b) == (10, 30)
    assert sum(boxes[n].w for n in ("x (a.py:1)", "y (a.py:2)", "z (a.py:3)")) == pytest.approx(1)
    svg = flame.diff_svg(a, b, "d", labels=("fork", "forkserver"))
    fills = {g.get("data-n"): g.find(SVG + "rect").get("fill") for g in _frames(svg)}
    titles = {g.get("data-n"): g.find(SVG + "title").text for g in _frames(svg)}
    # y: 50% -> 12.5% of all samples: blue; z: 0 -> 50%: red, the largest change, full red.
    assert fills["y (a.py:2)"].endswith("ff") and not fills["y (a.py:2)"].startswith("#ff")
    assert fills["z (a.py:3)"] == "#ff2626"
    assert titles["z (a.py:3)"] == ("z (a.py:3)\nfork: 0 samples (0.0%)\nforkserver: 40 samples (50.0%)\n"
                                    "change: +50.0 points of share")
    assert flame.diff_colour(0.0, 1.0) == "#ffffff"
    assert flame.diff_colour(1.0, 2.0).startswith("#ff") and flame.diff_colour(-1.0, 2.0).endswith("ff")


def test_a_real_forkserver_child_shows_its_startup_tower():
    """On py-spy's real output: the re-run of the main module is a tower of its
    own under spawn's prepare, beside the target's under BaseProcess._bootstrap."""
    by_process, _, _ = read_raw(FIXTURE.read_text())
    child = next(s for (pid, _, _), s in by_process.items() if pid == 30000)
    titles = [g.find(SVG + "title").text for g in _frames(flame.flame_svg(child, "writer"))]
    fixup = [t for t in titles if t.startswith("_fixup_main_from_path (multiprocessing/spawn.py:")]
    assert len(fixup) == 1 and "15 samples (27.8%)" in fixup[0]
    trimmed = flame.layout(from_child_start(child))
    roots = {b.name.split(" (")[0]: b for b in trimmed if b.depth == 1}
    assert set(roots) == {"prepare", "BaseProcess._bootstrap"}
    assert roots["prepare"].a == 15 and roots["BaseProcess._bootstrap"].a == 39


def test_colours_are_deterministic_and_set_the_import_machinery_apart():
    importing = flame.frame_colour("_find_and_load (<frozen importlib._bootstrap>:1176)")
    assert importing == flame.frame_colour("_find_and_load (<frozen importlib._bootstrap>:1176)")
    assert importing != flame.frame_colour("run_writer (writerprof/repro/writer.py:28)")
    assert flame.frame_colour("all", depth=0) == "#c8c8c8"


def _process(pid, threads, ids=None):
    samples = {}
    for table in threads.values():
        for frames, count in table.items():
            samples[frames] = samples.get(frames, 0) + count
    return ProcessStacks(proc=0, pid=pid, host="h", role="producer", samples=samples, rate_hz=100.0,
                         threads={} if UNTOLD in threads else threads,
                         thread_ids=0 if UNTOLD in threads else ids or len(threads))


MAIN = {("<module> (m.py:1)", "put (q.py:2)"): 400}
FEEDER = {("Thread._bootstrap (threading.py:1)", "_feed (q.py:9)"): 363}


def test_the_subtitle_says_how_many_threads_are_added_up_and_their_time_beside_the_run():
    producer = _process(9, {"thread MainThread": MAIN, "thread QueueFeederThread": FEEDER})
    assert flame.added_up([producer], 100, run_s=4.7) == (
        "2 threads added up: 763 samples at 100 Hz, 7.6 s of thread time over a 4.7 s run")
    assert flame.added_up([producer], 100, threads=True, run_s=4.7).startswith(
        "2 threads, each thread under its name: 763 samples")
    alone = _process(10, {"thread MainThread": MAIN})
    assert flame.added_up([alone], 100, run_s=4.7) == "400 samples at 100 Hz (4.0 s)"
    assert flame.added_up([alone, _process(11, {"thread MainThread": MAIN})], 100).startswith(
        "2 threads of 2 processes added up: 800 samples")
    assert flame.added_up([alone, _process(12, {UNTOLD: MAIN})], 100).startswith(
        "2 processes added up (threads not told apart): 800 samples")
    assert flame.added_up(MAIN, 100) == "400 samples at 100 Hz (4.0 s)"  # a count table: its samples alone
    svg = flame.flame_svg([producer], "producer", run_s=4.7)
    assert "2 threads added up: 763 samples at 100 Hz, 7.6 s of thread time over a 4.7 s run" in svg
    split = flame.flame_svg([producer], "producer", threads=True)
    assert {g.get("data-n") for g in _frames(split) if g.get("data-d") == "1"} == {
        "thread MainThread", "thread QueueFeederThread"}


def test_the_report_draws_threads_apart_where_a_process_had_several():
    producer = _process(9, {"thread MainThread": MAIN, "thread QueueFeederThread": FEEDER})
    writer = ProcessStacks(proc=1, pid=11, host="h", role="writer", samples=dict(MAIN), rate_hz=100.0,
                           threads={"thread MainThread": dict(MAIN)}, thread_ids=1)
    graphs = flame.role_graphs([producer, writer], "run1", run_s=4.7)
    roots = {name: {g.get("data-n") for g in _frames(svg) if g.get("data-d") == "1"} for name, svg in graphs.items()}
    assert roots == {"writer stacks (1 process)": {"<module> (m.py:1)"},
                     "producer stacks (1 process)": {"thread MainThread", "thread QueueFeederThread"}}
    diffs = flame.role_diffs([producer], [producer], ("fork", "forkserver"))
    [(name, svg)] = diffs.items()
    assert "each thread under its name: A 2 threads, B 2 threads" in svg
