"""What ``diagnose`` costs: every fixture log once, and a journal of days read bounded (issue 22).

The suite diagnoses the two corpora many times over (each release's advice checks, the work
splits, the needles), and a watch of a server that has served for days diagnoses its bounded
text (the first 512 KB and the last 2 MB of the log) each time it reads it. This prints the CPU
seconds of each, in this process (``time.process_time``), after the imports:

    python bench/diagnose_cost.py [--what corpus|journal|both]

Compare two checkouts by their ``PYTHONPATH`` (``PYTHONPATH=lib`` against another tree's lib):
the script imports whichever ``ddlab`` that puts first.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ddlab.core.bounded import HEAD_BYTES, TAIL_BYTES
from ddlab.diagnosis.diagnosis import diagnose

LOGS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "logs"


def corpus() -> float:
    """Diagnose every fixture log once; the CPU seconds."""
    texts = [path.read_bytes().decode("utf-8", "replace") for path in sorted(LOGS.rglob("*.log"))]
    start = time.process_time()
    for text in texts:
        diagnose(text)
    return time.process_time() - start


def journal() -> float:
    """Diagnose the bounded text of a long-serving journal: replay_none's start, its decode
    lines repeated to the bound, its crash (what tests/diagnosis's journal-of-days test reads)."""
    lines = (LOGS / "replay_none.journal.log").read_bytes().splitlines(keepends=True)
    serving = b"".join(lines[39:41])
    body = serving * ((HEAD_BYTES + TAIL_BYTES) // len(serving))
    text = (b"".join(lines[:41]) + body + b"".join(lines[41:])).decode()
    start = time.process_time()
    verdict = diagnose(text)
    spent = time.process_time() - start
    assert verdict.kind == "cuda_graph_replay", verdict.kind
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--what", choices=("corpus", "journal", "both"), default="both")
    args = parser.parse_args()
    if args.what in ("corpus", "both"):
        print(f"corpus ({len(list(LOGS.rglob('*.log')))} logs): {corpus():.2f} CPU-s")
    if args.what in ("journal", "both"):
        print(f"journal of days (bounded text): {journal():.2f} CPU-s")


if __name__ == "__main__":
    main()
