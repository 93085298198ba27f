"""Benchmark ddlab's target: tok/s and accept length per algorithm, budget, cap, graphs, batch size.

Usage: ``python bench/target.py [--device cpu|cuda] [--quick] [--json-out FILE]``.

Runs the engine in-process (no HTTP, so the figures are decoding, not the
web stack) on prompts cut from held-out standard-library files (never seen
in training): NONE, DFLASH (block 16) and DDTREE at budgets {4, 8, 16, 32,
64} x top-k caps {1, 2, 4, 8}, graphs on and off, batch sizes 1 and 4.
Each configuration gets its own engine and one excluded warmup request;
then ``--rounds`` interleaved passes run every configuration in turn, so a
shared machine's load falls on all of them alike. bs 1: every prompt alone,
tok/s = completion tokens / e2e latency per request; bs 4: prompts four at a
time, tok/s = tokens of the four / wall time; median and quartiles over all
requests (or batches) of all rounds. Accept length =
completion tokens / verify steps over the whole run (per-request counters,
as sglang.md recommends, not the server's lifetime average).

Prints a human-readable card, then the goals of issue 3 checked, then one
JSON line with every figure and the full configuration.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from ddlab.target.args import parse_args  # noqa: E402
from ddlab.target.engine import Engine  # noqa: E402
from ddlab.target.train import load_corpus  # noqa: E402

BUDGETS, CAPS = (4, 8, 16, 32, 64), (1, 2, 4, 8)


def prompts(n, length, seed=0):
    """n prompts of ``length`` bytes from held-out files, each starting at a line start."""
    _, held = load_corpus()
    data = bytes(held.tolist())
    gen = torch.Generator().manual_seed(seed)
    out = []
    while len(out) < n:
        at = data.find(b"\n", int(torch.randint(len(data) - 4 * length, (1,), generator=gen))) + 1
        chunk = data[at:at + length]
        if chunk.count(b"\n") >= 2:
            out.append(list(chunk))
    return out


def load_prompts(args):
    """The prompts of ``--prompts-file`` if it exists (so CPU and GPU runs share them), else fresh ones."""
    f = args.prompts_file
    if f and f.exists():
        return json.loads(f.read_text())[:args.prompts]
    ps = prompts(args.prompts, args.prompt_bytes)
    if f:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(ps))
    return ps


def configs(quick):
    algos = [("NONE", None, None), ("DFLASH", None, None)]
    budgets, caps = ((16,), (4,)) if quick else (BUDGETS, CAPS)
    algos += [("DDTREE", b, k) for b in budgets for k in caps]
    return algos


def flags(algo, budget, cap, graphs, args):
    f = ["--device", args.device, "--decode-log-interval", "100000", "--log-level", "warning",
         "--max-running-requests", "4", "--cuda-graph-max-bs", "4", "--cpu-threads", str(args.threads)]
    if algo != "NONE":
        f += ["--speculative-algorithm", algo]
    if algo == "DDTREE":
        f += ["--speculative-ddtree-budget", str(budget), "--speculative-ddtree-topk-cap", str(cap)]
    if not graphs:
        f.append("--disable-cuda-graph")
    return f


def run_round(engine, ps, bs, new_tokens):
    """One pass over the prompts: per-request (bs 1) or per-batch (bs 4) tok/s, tokens, verifies, outputs."""
    rates, tokens, verifies, outputs = [], 0, 0, []
    for i in range(0, len(ps) - bs + 1, bs):
        t0 = time.perf_counter()
        reqs = engine.generate(ps[i:i + bs], new_tokens)
        wall = time.perf_counter() - t0
        n = sum(len(r.output_ids) for r in reqs)
        rates.append(n / wall if bs > 1 else n / reqs[0].meta_info()["e2e_latency"])
        tokens += n
        verifies += sum(r.verify_ct for r in reqs)
        outputs += [r.output_ids for r in reqs]
    return rates, tokens, verifies, outputs


def bench(args):
    """Every configuration, in ``args.rounds`` interleaved rounds (a shared CPU's load hits all alike)."""
    ps = load_prompts(args)
    points = [(algo, b, k, graphs, bs) for graphs in (True, False) for bs in (1, 4)
              for algo, b, k in configs(args.quick)]
    engines, acc = {}, {p: [[], 0, 0] for p in points}
    for algo, b, k, graphs, _ in points:
        if (algo, b, k, graphs) not in engines:
            e = engines[(algo, b, k, graphs)] = Engine(parse_args(flags(algo, b, k, graphs, args)))
            e.generate(ps[:1], 8)  # warmup, excluded
    reference = {}
    for rnd in range(args.rounds):
        for p in points:
            rates, n, v, outs = run_round(engines[p[:4]], ps, p[4], args.new_tokens)
            a = acc[p]
            a[0] += rates
            a[1] += n
            a[2] += v
            a.append(reference.setdefault("NONE", outs) == outs)
        print(f"  round {rnd + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    rows = []
    for (algo, b, k, graphs, bs), (rates, n, v, *same) in acc.items():
        q = statistics.quantiles(rates, n=4) if len(rates) > 1 else [rates[0]] * 3
        rows.append({"algo": algo, "budget": b, "cap": k, "graphs": graphs, "bs": bs,
                     "tok_s": round(statistics.median(rates), 1), "tok_s_p25": round(q[0], 1),
                     "tok_s_p75": round(q[2], 1), "accept_length": round(n / v, 3) if v else 1.0,
                     "lossless": all(same)})
    return rows


def goals(rows):
    """Issue 3's goals, from the rows: speedups at bs 1 in each graph mode, accept trends, losslessness."""
    def pick(algo, graphs, bs=1):
        return [r for r in rows if r["algo"] == algo and r["graphs"] == graphs and r["bs"] == bs]

    out = {"all_lossless": all(r["lossless"] for r in rows)}
    for graphs, mode in ((True, "graphs"), (False, "eager")):
        none = pick("NONE", graphs)[0]["tok_s"]
        best = max(pick("DDTREE", graphs), key=lambda r: r["tok_s"])
        out[f"ddtree_vs_none_{mode}"] = round(best["tok_s"] / none, 3)
        out[f"ddtree_best_{mode}"] = f"B={best['budget']} cap={best['cap']}"
    by_budget = {}
    for r in pick("DDTREE", True):
        by_budget[r["budget"]] = max(by_budget.get(r["budget"], 0), r["accept_length"])
    out["accept_by_budget"] = by_budget
    values = list(by_budget.values())
    out["accept_rises_with_budget"] = all(a <= b for a, b in zip(values, values[1:]))
    out["dflash_accept"] = pick("DFLASH", True)[0]["accept_length"]
    out["ddtree_b16_beats_dflash"] = by_budget.get(16, 0) > out["dflash_accept"]
    for algo in ("NONE", "DDTREE"):
        on = max(r["tok_s"] for r in pick(algo, True))
        out[f"graphs_vs_eager_{algo.lower()}"] = round(on / max(r["tok_s"] for r in pick(algo, False)), 3)
    return out


def card(rows, g, meta):
    head = (f"== ddlab target benchmark: {meta['device_name']} ({meta['device']}, torch {meta['torch']}, "
            f"{meta['threads']} threads, {meta['rounds']} rounds, {meta['wall_s']:.0f} s) ==")
    lines = [head, f"{meta['prompts']} held-out prompts x {meta['prompt_bytes']} bytes, "
             f"{meta['new_tokens']} new tokens, greedy; bs 1: per-request tok/s, bs 4: per-batch tok/s; "
             "median [p25-p75]",
             f"{'algo':7s}{'B':>4}{'cap':>4} {'graphs':7s}{'bs':>3} {'tok/s':>9} {'[p25-p75]':>17} "
             f"{'accept':>7}"]
    for r in rows:
        lines.append(f"{r['algo']:7s}{r['budget'] or '-':>4}{r['cap'] or '-':>4} {str(r['graphs']):7s}"
                     f"{r['bs']:>3} {r['tok_s']:9.1f} {r['tok_s_p25']:8.1f}-{r['tok_s_p75']:<8.1f} "
                     f"{r['accept_length']:7.2f}")
    lines += [f"goal DDTREE >= 2x NONE tok/s, bs 1: graphs {g['ddtree_vs_none_graphs']:.2f}x "
              f"({g['ddtree_best_graphs']}), eager {g['ddtree_vs_none_eager']:.2f}x "
              f"({g['ddtree_best_eager']})",
              f"goal accept length rises with budget: {g['accept_rises_with_budget']} "
              f"{g['accept_by_budget']}",
              f"goal DDTREE B16 accepts more than DFLASH block 16 ({g['dflash_accept']:.2f}): "
              f"{g['ddtree_b16_beats_dflash']}",
              f"graphs vs eager, bs 1, best config: NONE {g['graphs_vs_eager_none']:.2f}x, "
              f"DDTREE {g['graphs_vs_eager_ddtree']:.2f}x",
              f"lossless (every output identical to NONE's): {g['all_lossless']}"]
    return "\n".join(lines)


def device_name(device):
    if device == "cuda":
        return torch.cuda.get_device_name()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()} x{os.cpu_count()}"
    return platform.machine()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--prompt-bytes", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--rounds", type=int, default=3, help="interleaved passes over all configurations")
    p.add_argument("--threads", type=int, default=1, help="torch threads on CPU")
    p.add_argument("--quick", action="store_true", help="NONE, DFLASH and DDTREE B16 cap4 only")
    p.add_argument("--prompts-file", type=Path, help="read the prompts here if it exists, else write them")
    p.add_argument("--json-out", type=Path, help="also write the JSON line here")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    t0 = time.perf_counter()
    rows = bench(args)
    meta = {"device": args.device, "device_name": device_name(args.device), "torch": torch.__version__,
            "threads": torch.get_num_threads(), "rounds": args.rounds, "prompts": args.prompts,
            "prompt_bytes": args.prompt_bytes, "new_tokens": args.new_tokens,
            "wall_s": round(time.perf_counter() - t0, 1)}
    g = goals(rows)
    print(card(rows, g, meta))
    line = json.dumps({"meta": meta, "goals": g, "rows": rows})
    if args.json_out:
        args.json_out.write_text(line + "\n")
    print(line)


if __name__ == "__main__":
    main()
