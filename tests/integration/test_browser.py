"""The pages and exports in the programs users open them with: `report --html`
and contrast.html in headless Chromium (no console error, no request leaving
the file, every plot and flamegraph drawn, no text laid over other text,
each flamegraph whole in its frame at 1280 px and in a narrower window,
hover names a frame and its share, a click zooms the frame to the full
width, a 1280 px screenshot of each, kept in the test's tmp dir), and
both exports imported into the speedscope app itself (every process listed by
name). Perfetto's own parser (trace_processor) is not installable offline: its
PyPI wheel downloads the binary at first use; see docs/ecosystem.md."""

from __future__ import annotations

import json
import re

import pytest

from headless import WIDTH, chromium, overlapping_text, page_of, png_size, speedscope_app
from helpers import run_writerprof, writerprof_command
from writerprof.run import load

pytestmark = pytest.mark.browser
REPRO = ["repro", "--saves", "2", "--size", "64MiB", "--chunk-size", "16MiB"]


@pytest.fixture(scope="module")
def browser():
    with chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    run_writerprof("record", "-o", tmp / "run", "--", *writerprof_command(), *REPRO,
                   "--start-method", "forkserver")
    _stacks_or_skip(tmp / "run")
    return tmp / "run"


def _stacks_or_skip(run_dir):
    """Flamegraphs and speedscope profiles need py-spy's stacks."""
    stacks = load(run_dir).meta.get("stacks") or {}
    if not stacks.get("taken"):
        pytest.skip(f"py-spy took no stacks here ({stacks.get('reason')}): no flamegraph to load")


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory):
    return tmp_path_factory.mktemp("screenshots")


def _open(page, path):
    page.goto(path.resolve().as_uri(), wait_until="load")  # images and frames loaded too


def _check_images(page):
    images = page.locator("img")
    assert images.count() > 0
    for i in range(images.count()):
        image = images.nth(i)
        assert image.evaluate("e => e.complete && e.naturalWidth > 0"), image.get_attribute("alt")
        box = image.bounding_box()
        assert box and box["width"] > 10 and box["height"] > 10, (image.get_attribute("alt"), box)


def _zoom_target(frame):
    """A frame above the root, drawn wide enough to point at, narrower than
    the whole graph when there is one (so that the zoom changes something)."""
    frames = frame.locator("g.f")
    drawn = frames.evaluate_all("gs => gs.map(g => [+g.dataset.d, +g.dataset.w,"
                                " g.querySelector('rect').getBoundingClientRect().width])")
    candidates = [(share > 0.95, -share, i) for i, (depth, share, px) in enumerate(drawn)
                  if depth >= 1 and px >= 30]
    assert candidates, "no frame above the root wide enough to hover"
    return frames.nth(min(candidates)[2])


def _check_flamegraphs(page):
    """Every flamegraph drawn; hover shows a frame's name and share; a click
    zooms it to span the width of the root frame."""
    iframes = page.locator("iframe")
    assert iframes.count() > 0, "no flamegraph on the page"
    for i in range(iframes.count()):
        box = iframes.nth(i).bounding_box()
        assert box and box["width"] > 100 and box["height"] > 50, box
        frame = page.frame_locator("iframe").nth(i)
        svg = frame.locator("svg").bounding_box()
        assert svg and svg["width"] > 100 and svg["height"] > 50, svg
        root = frame.locator('g.f[data-d="0"] rect').first.bounding_box()
        assert root and root["width"] > 100
        target = _zoom_target(frame)
        name = target.get_attribute("data-n")
        before = target.locator("rect").bounding_box()
        target.hover(position={"x": 2, "y": 2})  # the group: its label is on top of its rect
        details = frame.locator("#details").text_content()
        assert name in details and re.search(r"\d+(\.\d+)?%", details), (name, details)
        target.click(position={"x": 2, "y": 2})
        after = target.locator("rect").bounding_box()
        assert after["width"] == pytest.approx(root["width"], abs=2), (name, before, after, root)
        assert after["x"] == pytest.approx(root["x"], abs=2)
        frame.locator("#reset").click()  # and back
        assert target.locator("rect").bounding_box()["width"] == pytest.approx(before["width"], abs=1)


def _frames_uncut(page):
    """Every flamegraph's frame holds all of it, its tallest towers and right
    edge included: nothing in a frame scrolls, at the page's width."""
    for frame in page.frames[1:]:
        sizes = frame.evaluate("[document.documentElement.scrollWidth, innerWidth,"
                               " document.documentElement.scrollHeight, innerHeight]")
        assert sizes[0] <= sizes[1] and sizes[2] <= sizes[3], (page.viewport_size, sizes)


def _screenshot(page, path, width: int = WIDTH):
    """The whole page as a person sees it (1280 px wide); no text on other text."""
    page.screenshot(path=str(path), full_page=True)
    shot_width, height = png_size(path)
    assert shot_width == width and height > 300
    assert not overlapping_text(page), (path, overlapping_text(page))


def test_overlapping_text_is_seen(browser, tmp_path):
    """The check finds text laid over text (and not text side by side)."""
    page_file = tmp_path / "overlap.html"
    page_file.write_text('<!DOCTYPE html><html><body><p><span>side</span> <span>by side</span></p>'
                         '<span style="position:absolute;left:10px;top:200px">writer-startup</span>'
                         '<span style="position:absolute;left:40px;top:204px">main-reimport</span></body></html>')
    with page_of(browser) as (page, watch):
        _open(page, page_file)
        found = overlapping_text(page)
    assert [(a, b) for a, b, _, _ in found] == [("writer-startup", "main-reimport")]


def test_html_report_in_chromium(browser, recording, screenshots):
    html = recording.parent / "report.html"
    run_writerprof("report", recording, "--html", html)
    with page_of(browser) as (page, watch):
        _open(page, html)
        _check_images(page)
        # The affinity timeline, or (one NUMA node, no affinity changed) the note saying why it is left out.
        assert page.locator('img[alt="affinity_timeline"], #affinity_timeline-left-out').count() == 1
        _check_flamegraphs(page)
        _screenshot(page, screenshots / "report.png")
        _frames_uncut(page)
        page.set_viewport_size({"width": 900, "height": 900})  # a narrower window scales a graph, cuts none
        _frames_uncut(page)
        _screenshot(page, screenshots / "report-900.png", width=900)
        watch.assert_clean()


def test_contrast_html_in_chromium(browser, tmp_path, screenshots):
    out = tmp_path / "contrast"
    run_writerprof("contrast", "--repeat", "1", "-o", out, "--", *writerprof_command(), *REPRO, timeout=400)
    for run_dir in (out / "runs").iterdir():
        _stacks_or_skip(run_dir)
    with page_of(browser) as (page, watch):
        _open(page, out / "contrast.html")
        _check_images(page)
        _check_flamegraphs(page)
        _screenshot(page, screenshots / "contrast.png")
        _frames_uncut(page)
        watch.assert_clean()


def _speedscope_profiles(browser, app, profile_file, screenshot) -> list[str]:
    """Import a file into the speedscope app as a user does (its file input),
    open its profile list and return the names listed there."""
    with page_of(browser) as (page, watch):
        _open(page, app)
        page.set_input_files("#file", str(profile_file))
        current = page.get_by_text(re.compile(r"\(\d+/\d+\)\s*$")).first
        current.wait_for()
        count = int(re.search(r"/(\d+)\)", current.text_content()).group(1))
        current.click()
        rows = page.locator("body").inner_text().splitlines()
        listed = [m.group(1).strip() for m in (re.match(r"^\d+\t(.+)\t[\d.]+\s*\S*$", r) for r in rows) if m]
        page.screenshot(path=str(screenshot))
        watch.assert_clean()
    assert len(listed) == count, (count, rows)
    return listed


def test_speedscope_app_lists_every_process_profile(browser, recording, tmp_path, screenshots):
    app = speedscope_app()
    profile = tmp_path / "profile.speedscope.json"
    run_writerprof("export", recording, "--speedscope", profile)
    names = [p["name"] for p in json.loads(profile.read_text())["profiles"]]
    assert any(n.startswith("writer pid ") for n in names) and any(n.startswith("producer pid ") for n in names)
    listed = _speedscope_profiles(browser, app, profile, screenshots / "speedscope.png")
    assert sorted(listed) == sorted(names)


def test_perfetto_export_parses_in_speedscope_trace_event_importer(browser, recording, tmp_path, screenshots):
    """speedscope's importer for Chrome's trace-event format is the one
    maintained parser of it that installs here; it names a profile per thread
    that has slices, "PROCESS (pid N), THREAD (tid T)" from the metadata."""
    app = speedscope_app()
    trace_file = tmp_path / "trace.json"
    run_writerprof("export", recording, "--perfetto", trace_file)
    events = json.loads(trace_file.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    with_slices = {names[e["pid"]] for e in events if e["ph"] == "X"}
    listed = _speedscope_profiles(browser, app, trace_file, screenshots / "perfetto-in-speedscope.png")
    shown = {re.sub(r" \(pid \d+\), .*$", "", n) for n in listed}
    assert with_slices and with_slices <= shown, (with_slices, listed)
