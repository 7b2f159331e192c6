"""Debian's Chromium, headless, driven by Playwright (the PyPI package, with
the system browser as executable_path: Playwright's own browser download is
never used), with the network closed: every request that is not to a file
is aborted and kept, and console errors and uncaught exceptions are kept,
for the test to assert on. The speedscope app comes from the npm package
`speedscope`, installed once into the tests' cache."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from testcache import CACHE

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# What keeps Chromium off the network by itself (no background fetches,
# updates, sync or QUIC probes); Playwright adds a fresh profile directory.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WIDTH = 1280
SPEEDSCOPE_VERSION = "1.25.0"


@dataclass
class Watch:
    """What a page did that it should not have."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    outside_requests: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)

    def assert_clean(self):
        assert not self.outside_requests, f"requests that left the file: {self.outside_requests}"
        assert not self.page_errors, f"uncaught exceptions: {self.page_errors}"
        assert not self.console_errors, f"console errors: {self.console_errors}"


def _playwright_or_skip():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright is not installed (pip install 'writerprof[browser]')")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run installs it)")
    return sync_playwright


@contextmanager
def chromium():
    """A headless Chromium; one per test module (a start costs a second)."""
    sync_playwright = _playwright_or_skip()
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def page_of(browser, height: int = 900):
    """A new page 1280 px wide in a context of its own, and its Watch."""
    context = browser.new_context(viewport={"width": WIDTH, "height": height})
    watch = Watch()

    def route(route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:  # data: URIs never reach the router; anything else is the network
            watch.outside_requests.append(route.request.url)
            route.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.set_default_timeout(20_000)

    def console(message):
        watch.console.append((message.type, message.text))
        if message.type == "error":
            watch.console_errors.append(message.text)

    page.on("console", console)
    page.on("pageerror", lambda error: watch.page_errors.append(str(error)))
    try:
        yield page, watch
    finally:
        context.close()


# Every line box of every rendered text node in a document, and the pairs
# of boxes of different nodes that overlap by more than a pixel each way.
_OVERLAPPING_TEXT = """() => {
  const boxes = [];
  const walker = document.createTreeWalker(document.documentElement, NodeFilter.SHOW_TEXT);
  let node, id = 0;
  while ((node = walker.nextNode())) {
    if (!node.textContent.trim()) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    id++;
    for (const r of range.getClientRects()) {
      if (r.width >= 1 && r.height >= 1)
        boxes.push([r.left, r.top, r.right, r.bottom, id, node.textContent.trim().slice(0, 60)]);
    }
  }
  boxes.sort((a, b) => a[1] - b[1]);
  const found = [];
  for (let i = 0; i < boxes.length; i++) {
    const a = boxes[i];
    for (let j = i + 1; j < boxes.length && boxes[j][1] < a[3]; j++) {
      const b = boxes[j];
      const across = Math.min(a[2], b[2]) - Math.max(a[0], b[0]);
      const up = Math.min(a[3], b[3]) - Math.max(a[1], b[1]);
      if (a[4] !== b[4] && across > 1 && up > 1) found.push([a[5], b[5], Math.round(across), Math.round(up)]);
    }
  }
  return found;
}"""


def overlapping_text(page) -> list[tuple[str, str, int, int]]:
    """Text that overlaps other text, as laid out, in the page and each of
    its frames (a flamegraph's labels): (one, the other, px across, px up)."""
    return [tuple(pair) for frame in page.frames for pair in frame.evaluate(_OVERLAPPING_TEXT)]


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def speedscope_app() -> Path:
    """index.html of the speedscope app, from the npm package (installed
    into the tests' cache on first use; .ci/run installs it up front)."""
    prefix = CACHE / f"speedscope-{SPEEDSCOPE_VERSION}"
    index = prefix / "node_modules" / "speedscope" / "dist" / "release" / "index.html"
    if index.is_file():
        return index
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("no npm to install the speedscope app (npm install speedscope)")
    prefix.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix),
                           f"speedscope@{SPEEDSCOPE_VERSION}"], capture_output=True, text=True, timeout=300)
    if done.returncode != 0 or not index.is_file():
        pytest.skip(f"npm could not install speedscope@{SPEEDSCOPE_VERSION}: {done.stderr.strip()[-300:]}")
    return index
