"""A headless-Chromium screenshot of a ddlab report: what a colleague sees first.

The picture in docs/ (docs/report-screenshot.png) is a sweep's report.html, 1280 px
wide, as Chromium draws it: verdict, provenance, table, figures. Regenerate it after
`make demo` (whose sweep leaves outputs/<run>-sweep-demo/report.html):

    .venv/bin/python tools/report_screenshot.py                 # the newest sweep report in outputs/
    .venv/bin/python tools/report_screenshot.py outputs/<run>/report.html --out docs/x.png
    .venv/bin/python tools/report_screenshot.py REPORT --height 800   # the first screen only

Needs Playwright (`pip install -e '.[test]'`) and a Chromium on PATH: Debian's package
(`apt-get install chromium`; `make hostdeps` installs it as root). `playwright install`
is not needed. Prints the PNG's path.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")  # as tests/report/install-chromium.sh
WIDTH = 1280


def newest_sweep_report(outputs: Path) -> Path:
    """The report.html of the newest run of the sweep notebook under ``outputs``."""
    for run in sorted(outputs.glob("*/run.json"), reverse=True):
        record = json.loads(run.read_text())
        if Path(str(record.get("notebook", ""))).stem == "sweep" and (run.parent / "report.html").is_file():
            return run.parent / "report.html"
    sys.exit(f"no sweep report under {outputs}: run `make demo` first, or name a report.html")


def chromium() -> str:
    path = next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)
    if not path:
        sys.exit(f"no Chromium on PATH (looked for {', '.join(CHROMIUM_NAMES)}): "
                 "`apt-get install chromium` as root, or `make hostdeps`")
    return path


def screenshot(report: Path, out: Path, *, height: int = 0) -> Path:
    """``report`` drawn 1280 px wide into ``out``: its first ``height`` px (0: the whole page)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium())
        page = browser.new_page(viewport={"width": WIDTH, "height": 800})
        page.goto(report.resolve().as_uri(), wait_until="load")  # "load": the figures too
        full = page.evaluate("document.documentElement.scrollHeight")
        clip = {"x": 0, "y": 0, "width": WIDTH, "height": min(height, full) if height else full}
        out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out), full_page=True, clip=clip)
        browser.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", nargs="?", type=Path,
                        help="a report.html (default: the newest sweep report in outputs/)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "report-screenshot.png")
    parser.add_argument("--height", type=int, default=0, help="pixels from the top (0: the whole page)")
    args = parser.parse_args(argv)
    if args.report is None:
        from ddlab.core.paths import outputs_dir

        args.report = newest_sweep_report(outputs_dir())
    if not args.report.is_file():
        sys.exit(f"{args.report}: no such file; give an outputs/<run>/report.html")
    print(screenshot(args.report, args.out, height=args.height))
    return 0


if __name__ == "__main__":
    sys.exit(main())
