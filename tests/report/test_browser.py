"""The report and JupyterLab in a real browser, read and used as a person would.

Playwright drives Debian's Chromium as its executable (``make test`` installs it as root
through tests/report/install-chromium.sh; ``playwright install`` is not used, so this
works offline). Where Chromium is missing or cannot start, the browser tests skip and say
why. Playwright adds ``--no-sandbox`` itself, so Chromium starts as root too.

- A sweep's report.html (one small ``ddlab run sweep`` on the embedded target, 2 cells,
  about 25 s, built once per test run) is opened over file:// at 1280x800: the verdict
  comes first and on the first screen, then provenance, the cells table and the figures
  (loaded), and no heading stands over nothing.
- JupyterLab driven as a user drives it (every notebook, Run All, the explorer redrawing
  when its metric changes), started by ``make lab`` as the user starts it (as root too), is
  tests/userpath/test_user_lab.py, on the user's own path.
- tools/report_screenshot.py draws a report into a PNG.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ddlab
import browserkit
import reportkit
from labkit import REPO

pytestmark = [pytest.mark.slow, pytest.mark.browser]

VIEWPORT = {"width": 1280, "height": 800}
SECTIONS = ("#ddlab-verdict", "#ddlab-provenance", "#ddlab-table", "#ddlab-figures")
JUPYTER = str(Path(sys.executable).with_name("jupyter"))


@pytest.fixture(scope="module")
def chromium():
    """A headless Chromium (Debian's) under Playwright; skips, saying why, where it cannot start."""
    yield from browserkit.chromium()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    """The run folder of one small ``ddlab run sweep`` (budget 4 x cap 1, graphs off), built
    once per test run and shared with tests/report/test_runs.py (reportkit.small_run_sweep):
    under pytest-xdist the first worker to ask runs it, the others wait on a file lock."""
    return reportkit.small_run_sweep(tmp_path_factory)[1]


def _words(text: str) -> str:
    return " ".join(text.split())


# --- the report ---------------------------------------------------------------------

# The visible elements (other than the verdict, its ancestors and its own parts) whose
# content starts above the verdict: what a reader would meet before it.
ABOVE_VERDICT_JS = """() => {
  const verdict = document.querySelector('#ddlab-verdict');
  const shown = e => { const r = e.getBoundingClientRect(), s = getComputedStyle(e);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden'; };
  const content = e => e.matches('img,canvas,svg,table,input,select')
    || [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
  const top = verdict.getBoundingClientRect().top;
  return [...document.body.querySelectorAll('*')]
    .filter(e => !e.contains(verdict) && !verdict.contains(e) && shown(e) && content(e)
                 && e.getBoundingClientRect().top < top - 1)
    .map(e => e.tagName + ': ' + (e.innerText || e.getAttribute('src') || '').trim().slice(0, 80));
}"""

# Headings under which nothing visible follows before the next heading of their level or
# above (or the end of the page): a section a reader opens to find empty. (The verdict's
# own heading is content: a verdict may be a single line.)
EMPTY_SECTIONS_JS = """() => {
  const shown = e => { const r = e.getBoundingClientRect(), s = getComputedStyle(e);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden'; };
  const blocks = [];
  for (const e of document.body.querySelectorAll('*')) {
    if (!shown(e)) continue;
    if (/^H[1-6]$/.test(e.tagName) && !e.closest('#ddlab-verdict')) {
      blocks.push({level: +e.tagName[1], text: e.innerText.trim()});
      continue;
    }
    if (e.closest('h1,h2,h3,h4,h5,h6') && !e.closest('#ddlab-verdict')) continue;
    if (e.matches('img,canvas,svg,table,input,select')
        || [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) blocks.push({level: 0});
  }
  return blocks.filter((b, i) => {
    if (!b.level) return false;
    for (const next of blocks.slice(i + 1)) {
      if (!next.level) return false;
      if (next.level <= b.level) return true;
    }
    return true;
  }).map(b => 'h' + b.level + ': ' + b.text);
}"""

BOX_JS = """e => { const r = e.getBoundingClientRect();
  return {top: r.top + window.scrollY, bottom: r.bottom + window.scrollY, height: r.height,
          text: e.innerText.trim()}; }"""


def _open_report(page, run_dir: Path):
    page.goto((run_dir / "report.html").as_uri(), wait_until="load")  # "load": images too
    missing = [s for s in SECTIONS if page.locator(s).count() != 1]
    assert not missing, f"report.html lacks exactly one of {missing} (the reader's sections)"
    return {s: page.locator(s).evaluate(BOX_JS) for s in SECTIONS}


def test_report_reads_verdict_then_provenance_table_and_figures(page, swept):
    boxes = _open_report(page, swept)
    headline = json.loads((swept / "run.json").read_text())["headline"]
    verdict = boxes["#ddlab-verdict"]
    assert headline and _words(headline)[:40] in _words(verdict["text"]), (
        f"the verdict says {verdict['text'][:200]!r}, not the run's headline {headline!r}")
    assert page.evaluate(ABOVE_VERDICT_JS) == [], "nothing stands above the verdict"
    assert 0 <= verdict["top"] and verdict["bottom"] <= VIEWPORT["height"], (
        f"the verdict spans y={verdict['top']:.0f}..{verdict['bottom']:.0f}: not all on the first "
        f"{VIEWPORT['height']} px screen")

    tops = [boxes[s]["top"] for s in SECTIONS]
    assert tops == sorted(tops) and len(set(tops)) == len(tops), (
        "top to bottom: " + ", ".join(f"{s} at y={boxes[s]['top']:.0f}" for s in SECTIONS))

    provenance = page.locator("#ddlab-provenance")
    assert provenance.locator("tr").count() >= 2, "provenance is a table of facts"
    text = boxes["#ddlab-provenance"]["text"]
    assert ddlab.__version__ in text, f"ddlab's version {ddlab.__version__} not in: {text[:500]}"
    assert re.search(r"(ddlab run sweep|papermill)\b.*budget", text, re.S), (
        f"no command that reproduces the run (ddlab run sweep / papermill ... budget): {text[:500]}")

    rows = page.locator("#ddlab-table tr:has(td)").count()
    assert rows >= 2, f"the cells table has {rows} rows; the sweep had a baseline and a grid cell"

    figures = page.locator("#ddlab-figures img").evaluate_all(
        "imgs => imgs.map(i => ({loaded: i.complete && i.naturalWidth > 0,"
        "                        shown: i.getBoundingClientRect().height > 0}))")
    assert len(figures) >= 2, f"{len(figures)} figures under #ddlab-figures"
    assert all(f["loaded"] and f["shown"] for f in figures), f"figures not drawn: {figures}"


def test_report_has_no_empty_section(page, swept):
    boxes = _open_report(page, swept)
    empty = [s for s, box in boxes.items() if box["height"] == 0 or not (
        box["text"] or page.locator(f"{s} img").count())]
    assert not empty, f"sections with nothing to see: {empty}"
    assert page.evaluate(EMPTY_SECTIONS_JS) == [], "headings with nothing under them"


def test_report_needs_no_network_and_fits_a_1280_px_screen(chromium, swept):
    """The page stands alone (issue 22: nbconvert's fetched require.js and MathJax from a
    CDN, which fail offline): loaded with the network blocked, it asks for nothing, says
    no error, draws every figure; nothing is wider than the screen but the cells table,
    which scrolls inside its own box; each figure has a heading above it."""
    context = chromium.new_context(viewport=VIEWPORT, offline=True)
    asked, errors = [], []

    def only_files(route):
        if route.request.url.startswith("file:"):
            return route.continue_()
        asked.append(route.request.url)
        return route.abort()

    context.route("**/*", only_files)
    page = context.new_page()
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto((swept / "report.html").as_uri(), wait_until="load")
        assert asked == [] and errors == [], (asked, errors)
        assert page.title() == "sweep local b4 x cap1 x nograph — ddlab"
        loaded = page.locator("#ddlab-figures img").evaluate_all(
            "imgs => imgs.map(i => i.complete && i.naturalWidth > 0)")
        assert loaded and all(loaded), loaded
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= VIEWPORT["width"], f"the page is {wide} px wide: it scrolls sideways"
        table = page.locator("#ddlab-table").evaluate(
            "e => ({overflow: getComputedStyle(e).overflowX, right: e.getBoundingClientRect().right})")
        assert table["overflow"] in ("auto", "scroll") and table["right"] <= VIEWPORT["width"], table
        headed = page.locator("#ddlab-figures img").evaluate_all(
            "imgs => imgs.map(i => { let e = i.previousElementSibling;"
            "  while (e && e.tagName === 'IMG' || e && e.tagName === 'P') e = e.previousElementSibling;"
            "  return e ? e.tagName + ': ' + e.innerText : null; })")
        assert all(h and h.startswith("H2: ") for h in headed), headed
    finally:
        context.close()


def test_report_screenshot_tool_draws_the_report(swept, chromium, tmp_path):
    """tools/report_screenshot.py (docs/report-screenshot.png): the report's top, 1280 px wide."""
    out = tmp_path / "shot.png"
    done = subprocess.run([sys.executable, str(REPO / "tools" / "report_screenshot.py"),
                           str(swept / "report.html"), "--out", str(out), "--height", "1200"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == str(out)
    header = out.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")
    assert (width, height) == (1280, 1200), f"{width}x{height}"


# --- JupyterLab ---------------------------------------------------------------------
