"""A workload sweep's answer in words: where speculation stops paying.

:func:`workload_answer` gathers it from the levels frame
(:mod:`ddlab.sweeps.levels`): the levels, each config's crossover, the best config
per level, each cell's accept length per prompt set. :class:`SweepVerdict
<ddlab.report.verdicts.SweepVerdict>` keeps it as ``workload`` and reads it here: its
headline names the config that pays up to the highest level (one line, at most 160
characters, as every sweep's: issue 22), its details a line per config ("local-b16
pays up to concurrency 8 (1.90x [1.70-2.10]); ties at 16; loses at 32 (0.80x
[0.70-0.90])"), a line per level (the best config there, with its ties) and a line
per cell of accept lengths by prompt set (and by draft position).
"""

from __future__ import annotations

from ddlab.sweeps.levels import speedup_words

__all__ = ["workload_answer", "workload_headline", "workload_details", "workload_next_step",
           "workload_warnings"]

_POSITIONS_SHOWN = 4


def workload_answer(levels_frame, sets: list[dict]) -> dict:
    """The verdict's ``workload``: ``levels``, ``crossover``, ``best_per_level``,
    ``prompt_sets`` (JSON-ready); empty when the frame holds no levels."""
    from ddlab.sweeps.levels import best_per_level, crossover, levels_of

    levels = levels_of(levels_frame)
    if not levels:
        return {}
    found = crossover(levels_frame)
    families = set(levels_frame["family"].dropna()) if "family" in levels_frame else set()
    family = {"family": families.pop()} if len(families) == 1 and families != {"sglang"} else {}
    return {**family, "levels": levels,
            "crossover": [{k: v for k, v in c.items() if k not in ("levels", "speedups")}
                          | {"by_level": {str(k): v for k, v in c["levels"].items()},
                             "speedups": {str(k): v for k, v in c["speedups"].items()}}
                          for c in found],
            "best_per_level": best_per_level(levels_frame), "prompt_sets": sets,
            "failed": [{"name": r["name"], "concurrency": int(r["concurrency"]),
                        "failed": int(r["n_failed"]), "requests": int(r["n_requests_total"])}
                       for _, r in levels_frame.iterrows()
                       if "n_failed" in r and r["n_failed"] and r["n_failed"] == r["n_failed"]]}


def _top(answer: dict) -> dict | None:
    """The config that pays up to the highest level (then the fastest there)."""
    ranked = [c for c in answer.get("crossover") or [] if c.get("pays_up_to") is not None]
    if not ranked:
        return None
    return max(ranked, key=lambda c: (c["pays_up_to"],
                                      c["speedups"][str(c["pays_up_to"])].get("speedup") or 0))


def workload_headline(answer: dict, full: bool) -> str:
    """``. local-b16 pays up to concurrency 8 (1.90x [1.70-2.10]); ties at 16; ...``, or
    ``. No config pays at any level tried (1-16)``; not ``full``: only up to where it pays."""
    top = _top(answer)
    levels = answer.get("levels") or []
    if not answer.get("crossover"):
        return ""
    if top is None:
        return f". No config pays at any level tried ({levels[0]}-{levels[-1]})"
    words = top["words"].split("; pays again")[0]  # the details say it
    if not full:
        words = words.split(" (")[0]
    return f". {words}"


def workload_details(answer: dict) -> list[str]:
    """A line per config's crossover, per level's best, per cell's accept lengths by set."""
    rows = [f"crossover: {c['words']}" for c in answer.get("crossover") or []]
    for best in answer.get("best_per_level") or []:
        x = speedup_words(best)
        said = {"pays": "", "ties": ", within noise of no speculation",
                "loses": ", slower than no speculation"}.get(best["level_verdict"], "")
        ties = f" (ties with {', '.join(best['ties'])})" if best["ties"] else ""
        rows.append(f"best at concurrency {best['concurrency']}: {best['name']} {x}{said}{ties}")
    figure = _acceptance_words(answer)
    for cell in answer.get("prompt_sets") or []:
        if cell["role"] == "baseline":
            continue
        rows.append(f"{figure} by prompt set, {cell['name']}: {_sets_words(cell['sets'])}")
    return rows


def _family(answer: dict):
    """The sweep's server family (SGLang when the answer names none)."""
    from ddlab.config.families import FAMILIES, family_named

    return FAMILIES.get(answer.get("family")) or family_named(None)


def _acceptance_words(answer: dict) -> str:
    """The acceptance figure's name: SGLang's accept length, vLLM's mean acceptance length."""
    return _family(answer).acceptance


def _sets_words(sets: list[dict]) -> str:
    """``chat 2.10, code 3.40, math 2.80 (server counters); by position code 0.91/0.72/...``"""
    values = ", ".join(f"{s['set']} " + ("n/a" if s.get("accept_length") is None
                                         else f"{s['accept_length']:.2f}") for s in sets)
    sources = sorted({s.get("accept_source") for s in sets if s.get("accept_source")})
    words = values + (f" ({', '.join(sources)})" if sources else "")
    positions = [f"{s['set']} " + "/".join(f"{p:.2f}" for p in s["accept_per_position"]
                                           [:_POSITIONS_SHOWN])
                 for s in sets if s.get("accept_per_position")]
    if positions:
        shown = max(min(len(s["accept_per_position"]), _POSITIONS_SHOWN) for s in sets
                    if s.get("accept_per_position"))
        words += (f"; accepted at draft position {'/'.join(map(str, range(1, shown + 1)))}: "
                  + ", ".join(positions))
    return words


def workload_warnings(answer: dict) -> list[str]:
    """Levels where requests failed: their figures are not of that load."""
    failed = answer.get("failed") or []
    if not failed:
        return []
    shown = ", ".join(f"{f['name']} at {f['concurrency']} ({f['failed']} of {f['requests']})"
                      for f in failed[:6])
    more = f" and {len(failed) - 6} more" if len(failed) > 6 else ""
    return [f"requests failed under load: {shown}{more}: those levels' figures are not of "
            "that load (see each cell's bench.json)"]


def workload_next_step(answer: dict) -> str:
    top = _top(answer)
    if top is None:
        family = _family(answer)
        smaller = ("smaller budgets" if "budget" in family.knobs else
                   f"fewer {next(iter(family.knobs))}")  # vLLM: num_speculative_tokens
        return (f"no config pays even at the lowest level: sweep {smaller}, or check the "
                "drafter's acceptance per prompt set above")
    if top["every_level"]:
        return (f"{top['name']} pays at every level tried: add higher levels "
                f"(above {answer['levels'][-1]}) to find where it stops")
    return (f"to place {top['name']}'s crossover exactly, add levels between "
            f"{top['pays_up_to']} and {top.get('ties_at') or top.get('loses_at')}")
