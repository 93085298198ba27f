"""Measure ``ddlab diagnose`` on the real-log corpus (tests/fixtures/logs/real/).

Each log there is a paste from a public issue thread, labelled by two people before ddlab
ran on it (manifest.json says how). For a split (``work``: the logs the diagnosis was
developed on; ``heldout``: never tuned on; ``all``) this prints how often ddlab agrees on
``crashed``, ``kind`` and ``phase`` (phase only where the log shows it), broken down by
kind, by SGLang release family and by paste format; ``--misses`` lists each miss with its
URL. The last line is one JSON object with the counts. Each log is read as ``ddlab diagnose FILE``
reads it (``read_log``: its bytes decoded, CRLF and a progress bar's CR kept).

A held-out set is measured once, then folded into ``work`` (its logs keep
``heldout_round``: rounds 1 to 122, 43, 53, 41, 41, 47, 42, 40, 37, 40, 40, 26, 29, 10, 11, 15, 11, 17, 14, 7,
13, 9, 6, 2, 9, 8, 6, 3, 6, 11, 13, 9, 3, 9, 8, 6, 7, 13, 10, 12, 15, 11, 14, 10, 7, 6, 5, 4, 5, 5, 1, 4, 5, 6, 9, 11,
10, 9, 8, 10, 11, 9, 8, 3, 11, 9, 8, 3, 11, 8, 12, 11, 13, 13, 8, 10, 8, 10, 7, 13, 9, 8, 11, 11, 9, 7, 8, 8, 7,
11, 12, 12, 15, 15, 10, 13, 12, 15, 12, 11, 9, 7, 7, 5, 7, 10, 8, 6, 3, 4, 4, 4, 2, 2, 5, 1, 5, 8, 2, 3, 1, 2 and 9
logs, were folded in after their single measurement; round 21 measured 12, three dropped after);
``--split heldout`` with no held-out logs in the manifest says so and measures nothing.

    python tools/diagnosis_corpus.py --split work --misses
    python tools/diagnosis_corpus.py --split heldout

``--corpus vllm-real`` measures the vLLM corpus (tests/fixtures/logs/vllm-real/, issue 28)
the same way, broken down by labelled kind, speculative method and paste format; its held-out
rounds, 13, 31, 43, 30, 30, 30, 30, 28, 30, 14, 19, 20, 31, 29, 25, 19, 27, 28, 26, 13, 26, 23, 27, 16, 6,
16, 11, 20, 20, 13, 16, 17, 14, 9, 10, 13, 7, 9, 19, 15, 12, 13, 17, 11, 5, 3, 3, 5, 6, 16, 21, 22, 20, 19, 29,
27, 25, 25, 25, 29, 29, 32, 22, 25, 20, 11, 21, 24, 24, 18, 15, 22, 24, 19, 25, 21, 20, 18, 21, 19, 21, 21, 18, 23,
20, 22, 25, 23, 25, 19, 25, 22, 14, 25, 23, 23, 18, 17, 20, 19, 17, 12, 16, 13, 8, 3, 6, 5, 4, 3, 3, 3, 2, 4, 8, 4,
3, 2, 4, 4, 3 and 10 logs, were each measured once and folded into ``work`` like SGLang's (round 11 was kept held out
until round 12 was measured, then both were folded in; round 13 was kept held out for a session, then folded in; rounds
14 to 122 were folded in after their misses were read (rounds 84, 111, 112, 119 and 121 had none); round 29 measured 20,
one dropped after, 19 folded; docs/diagnosis.md, "vLLM").
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

from ddlab.diagnosis.diagnosis import diagnose, read_log

LOGS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "logs"
REAL = LOGS / "real"


def load(split: str) -> list[dict]:
    manifest = json.loads((REAL / "manifest.json").read_text())
    return [log for log in manifest["logs"] if split in ("all", log["split"])]


def text_of(log: dict) -> str:
    """The log's text as ``ddlab diagnose FILE`` reads it (``read_log``: bytes decoded, CRLF and a
    progress bar's CR kept, a journal of days read as its head and tail)."""
    return read_log(str(REAL / f"{log['id']}.log"))


def judged(log: dict, text: str | None = None) -> dict:
    """What ddlab says of one log (``text``: its text, already read), and whether each figure agrees
    with the labels."""
    found = diagnose(text_of(log) if text is None else text)
    kind = found.kind if found.crashed or found.kind == "request_error" else None
    # a kind the two labellers did not agree on ("kind_disputed": [one, other]) is not measured,
    # nor a phase a second look disputes ("phase_disputed": [labelled, second look])
    return {"id": log["id"], "crashed": found.crashed == log["crashed"],
            "kind": None if log.get("kind_disputed") else kind == log["kind"],
            "phase": None if not log["phase_in_log"] or log.get("phase_disputed")
            else found.phase == log["phase"],
            "said": (found.crashed, kind, found.phase), "want": (log["crashed"], log["kind"],
                                                                 log["phase"])}


def family(release) -> str:
    """``0.4.x``, ``0.5.x`` ... from the manifest's free-text release field."""
    match = re.search(r"\b0\.(\d+)", str(release or ""))
    return f"0.{match[1]}.x" if match else "unstated"


def table(rows: list[dict], logs: dict, key) -> list[str]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        for group in key(logs[row["id"]]):
            groups[group].append(row)
    out = []
    for group in sorted(groups, key=lambda g: (-len(groups[g]), g)):
        members = groups[group]
        kinded = [r for r in members if r["kind"] is not None]
        kinds, crashed = sum(r["kind"] for r in kinded), sum(r["crashed"] for r in members)
        phased = [r for r in members if r["phase"] is not None]
        out.append(f"  {group:<28} {len(members):>3} logs  kind {kinds}/{len(kinded)}  crashed "
                   f"{crashed}/{len(members)}  phase {sum(r['phase'] for r in phased)}/{len(phased)}")
    return out


def issue_class(log: dict) -> list[str]:
    """The issue-24 class family a log stands for: the part of its class before the colon."""
    return [log["class"].split(":", 1)[0].strip() or "(none)"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("work", "heldout", "all"), default="work")
    parser.add_argument("--misses", action="store_true", help="list every miss")
    parser.add_argument("--corpus", choices=("real", "vllm-real"), default="real",
                        help="the SGLang corpus (default) or vLLM's (issue 28)")
    args = parser.parse_args(argv)
    global REAL
    REAL = LOGS / args.corpus
    logs = {log["id"]: log for log in load(args.split)}
    if not logs:
        print(f"{args.split}: no logs with split {args.split!r} in {REAL / 'manifest.json'} (a "
              "held-out round is folded into 'work' after its one measurement; a new round's logs "
              "carry split 'heldout'): nothing measured")
        print(json.dumps({"split": args.split, "logs": 0}))
        return 0
    rows = [judged(log) for log in logs.values()]
    phased = [r for r in rows if r["phase"] is not None]
    kinded = [r for r in rows if r["kind"] is not None]
    counts = {"corpus": args.corpus, "split": args.split, "logs": len(rows),
              "crashed": sum(r["crashed"] for r in rows), "kind": sum(r["kind"] for r in kinded),
              "kind_logs": len(kinded), "phase": sum(r["phase"] for r in phased),
              "phase_logs": len(phased)}
    print(f"{args.split}: {len(rows)} logs; crashed {counts['crashed']}/{len(rows)}, kind "
          f"{counts['kind']}/{len(kinded)} (labels agreed), phase {counts['phase']}/{len(phased)} "
          "(logs that show it)")
    print("by labelled kind:")
    print("\n".join(table(rows, logs, lambda log: [str(log["kind"])])))
    if args.corpus == "vllm-real":
        print("by speculative method / feature:")
        print("\n".join(table(rows, logs, lambda log: log["features"] or ["(none)"])))
    else:
        print("by issue-24 class:")
        print("\n".join(table(rows, logs, issue_class)))
        print("by release family:")
        print("\n".join(table(rows, logs, lambda log: [family(log["sglang"])])))
    print("by paste format:")
    print("\n".join(table(rows, logs, lambda log: log["paste"] or ["plain"])))
    if args.misses:
        print("misses:")
        for row in rows:
            if not (row["crashed"] and row["kind"] is not False and row["phase"] is not False):
                print(f"  {row['id']}: said {row['said']}, labelled {row['want']}  "
                      f"{logs[row['id']]['url']}")
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
