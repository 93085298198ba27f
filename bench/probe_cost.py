"""What seeing inside the verify path costs: an on-error probe, and the lossless check.

Usage: ``python bench/probe_cost.py [--ab-rounds 15] [--pairs 3] [--checks 5] [--json-out FILE]``.

0. **On-error probe, in-process A/B (the headline figure for the 2 % goal).**
   One process builds the embedded target engine exactly as ``bench/target.py``
   does for DDTREE (B16, cap 4, graphs on, bs 1), warms it up, then runs
   ``--ab-rounds`` rounds plain (A) and as many with the probe armed (B), in
   ABBA order (A B, B A, A B, ...), each round the same greedy requests. B arms
   an on-error probe on :data:`PROBE` through the hook's own code path
   (``hook.Probe`` + ``hook.try_arm``: resolve, wrap, setattr) and disarms it by
   putting the original attribute back. Each round gives one tok/s (its
   completion tokens over the sum of its requests' e2e latencies); the figure
   is median(B) / median(A) with a 95 % bootstrap interval
   (``ddlab.lab.stats.ratio_ci``, fixed seed), and, as a cross-check, the
   median of the per-pair ratios with its interval, and the same ratio by
   process CPU time (tokens / CPU seconds of the round), which other processes'
   share of the cores moves less than wall time. Every B round must have
   armed the probe (the class attribute carries the probe's key), counted
   probed calls (> 0: the graph path ran) and written no record but
   ``armed`` (on-error mode is silent on success); every round's tokens must
   equal the first A round's (a probe never changes behaviour).
1. **On-error probe, separate processes.** ``bench/target.py --quick`` runs twice per pair, once
   plain and once with the probe the replay crash suggests armed through the
   hook's own files and environment (``ddlab.probes``: ``sitecustomize.py`` on
   PYTHONPATH, ``DDLAB_PROBES``), alternating which goes first, so a shared
   machine's load falls on both alike. The figure is DDTREE (B16, cap 4, graphs
   on, bs 1) tok/s, probed over plain, per pair: median and range over the
   pairs. The probed run must log the probe ``armed`` (else it measured nothing).
   Each run is a fresh process, so this ratio carries the machine's run-to-run
   noise (+-10 % on a shared 2-core VM); ``--pairs 0`` skips it.
2. **Lossless check.** A DDTREE target server is started; ``lossless.collect``
   (the shipped prompts, each alone then all in one batch, greedy, 32 tokens)
   runs ``--checks`` times: median and quartiles of its wall time. ``compare``
   itself is pure Python over a few hundred ids (microseconds).

Prints a card, then one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from ddlab.lab import lossless as ll  # noqa: E402
from ddlab.probes import install_files, probe_env  # noqa: E402

PROBE = "ddlab.target.runner.decode_cuda_graph_runner.DecodeCudaGraphRunner.fill_from"
TARGET_ARGS = ["--quick", "--rounds", "2", "--prompts", "4", "--new-tokens", "64"]


def _bench_target():
    """bench/target.py as a module (its prompts, flags and round loop, used as they are)."""
    spec = importlib.util.spec_from_file_location("ddlab_bench_target", ROOT / "bench" / "target.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _target_argv() -> list[str]:
    """bench/target.py's defaults with :data:`TARGET_ARGS`, as its own parser reads them."""
    return [a for a in TARGET_ARGS if a != "--quick"]


def ab_probe_cost(rounds: int) -> dict:
    """In-process A/B: ``rounds`` plain and ``rounds`` probed rounds in ABBA order (module doc, 0)."""
    from ddlab.lab import stats
    from ddlab.probes import hook
    from ddlab.target.args import parse_args
    from ddlab.target.engine import Engine
    from ddlab.target.runner.decode_cuda_graph_runner import DecodeCudaGraphRunner

    bt = _bench_target()
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--prompt-bytes", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--prompts-file", type=Path)
    args = p.parse_args(_target_argv())
    ps = bt.load_prompts(args)
    engine = Engine(parse_args(bt.flags("DDTREE", 16, 4, True, args)))
    engine.generate(ps[:1], 8)  # warmup, excluded (as bench/target.py)
    bt.run_round(engine, ps, 1, args.new_tokens)  # one more full pass, excluded
    if engine.runner.graph_runner is None:
        raise SystemExit("graphs are off: the probed method would never run")

    owner, name = DecodeCudaGraphRunner, PROBE.rsplit(".", 1)[1]
    original = vars(owner)[name]
    same = [k for k, v in vars(owner).items() if v is original]  # the name and any aliases

    def one_round(armed: bool) -> dict:
        probe = hook.Probe(PROBE, "error", None) if armed else None
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            if armed:
                hook.try_arm(probe)
                got = vars(owner)[name]
                if probe.key not in getattr(got, "__ddlab_probes__", ()):
                    raise SystemExit(f"the probe was not armed: {err.getvalue()[-2000:]}")
            elif vars(owner)[name] is not original:
                raise SystemExit("a plain round found the method still wrapped")
            try:
                cpu0 = time.process_time()
                rates, tokens, verifies, outputs = bt.run_round(engine, ps, 1, args.new_tokens)
                cpu = time.process_time() - cpu0
            finally:
                if armed:
                    for k in same:
                        setattr(owner, k, original)
        # bs 1: each rate is tokens / e2e latency of one request; the round's tok/s is its
        # tokens over the sum of its requests' latencies
        seconds = sum(len(o) / r for o, r in zip(outputs, rates))
        out = {"tok_s": tokens / seconds, "cpu_tok_s": tokens / cpu, "tokens": tokens, "verifies": verifies,
               "seconds": seconds, "outputs": outputs}
        lines = [ln for ln in err.getvalue().splitlines() if ln.startswith(hook.TAG + " ")]
        if armed:
            events = [json.loads(ln.split(" ", 1)[1]).get("event") for ln in lines]
            out["calls"] = next(probe.calls) - 1
            out["records"] = probe.records
            out["events"] = events
            if out["calls"] <= 0:
                raise SystemExit("the probed method was never called in a B round (graph path not taken?)")
            if probe.records or events != ["armed"]:
                raise SystemExit(f"the on-error probe wrote records on the success path: {lines}")
        elif lines:
            raise SystemExit(f"a plain round wrote probe records: {lines}")
        return out

    load_before = os.getloadavg()
    order = []
    for i in range(rounds):
        order += ["A", "B"] if i % 2 == 0 else ["B", "A"]
    a, b, pair_ratios, calls, verifies_s = [], [], [], [], []
    a_cpu, b_cpu = [], []
    reference, lossless = None, True
    start = time.perf_counter()
    for i in range(rounds):
        pair = {}
        for kind in order[2 * i: 2 * i + 2]:
            r = one_round(kind == "B")
            pair[kind] = r["tok_s"]
            if reference is None:
                reference = r["outputs"]
            lossless &= r["outputs"] == reference
            (b_cpu if kind == "B" else a_cpu).append(r["cpu_tok_s"])
            if kind == "B":
                b.append(r["tok_s"])
                calls.append(r["calls"])
            else:
                a.append(r["tok_s"])
                verifies_s.append(r["verifies"] / r["seconds"])
        pair_ratios.append(pair["B"] / pair["A"])
        print(f"A/B pair {i + 1}/{rounds} ({''.join(order[2 * i: 2 * i + 2])}): plain "
              f"{pair['A']:.1f} tok/s, probed {pair['B']:.1f} tok/s, ratio {pair_ratios[-1]:.3f}, "
              f"probed calls {calls[-1]}", flush=True)
    wall = time.perf_counter() - start
    load_after = os.getloadavg()
    ratio, low, high = stats.ratio_ci(b, a)
    pmed, plow, phigh = stats.median_ci(pair_ratios)
    cpu_ratio, cpu_low, cpu_high = stats.ratio_ci(b_cpu, a_cpu)
    a_med, a_low, a_high = stats.median_ci(a)
    b_med, b_low, b_high = stats.median_ci(b)
    return {"probe": PROBE, "mode": "error", "config": "DDTREE B16 cap4 graphs bs1",
            "prompts": len(ps), "new_tokens": args.new_tokens, "rounds_each": rounds,
            "order": "".join(order), "plain_tok_s": [round(x, 2) for x in a],
            "probed_tok_s": [round(x, 2) for x in b],
            "plain_median": round(a_med, 2), "plain_ci": [round(a_low, 2), round(a_high, 2)],
            "probed_median": round(b_med, 2), "probed_ci": [round(b_low, 2), round(b_high, 2)],
            "ratio": round(ratio, 4), "ratio_ci": [round(low, 4), round(high, 4)],
            "pair_ratio_median": round(pmed, 4), "pair_ratio_ci": [round(plow, 4), round(phigh, 4)],
            "plain_cpu_tok_s": [round(x, 2) for x in a_cpu], "probed_cpu_tok_s": [round(x, 2) for x in b_cpu],
            "cpu_ratio": round(cpu_ratio, 4), "cpu_ratio_ci": [round(cpu_low, 4), round(cpu_high, 4)],
            "probed_calls_per_round": calls, "verify_steps_per_s": round(statistics.median(verifies_s), 1),
            "records_on_success": 0, "lossless": lossless, "wall_s": round(wall, 1),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in load_after]}


def _tok_s(json_path: Path) -> float:
    rows = json.loads(json_path.read_text())["rows"]
    row = next(r for r in rows if r["algo"] == "DDTREE" and r["graphs"] and r["bs"] == 1)
    return row["tok_s"]


def _target_run(out: Path, env: dict) -> tuple[float, str]:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "target.py"), *TARGET_ARGS,
                           "--json-out", str(out)], env=env, capture_output=True, text=True,
                          check=True)
    return _tok_s(out), done.stderr


def probe_cost(pairs: int, work: Path) -> dict:
    folder = work / "hook"
    install_files(folder)
    plain_env = {**os.environ, "OMP_NUM_THREADS": "1"}
    probed_env = {**plain_env, **probe_env([PROBE], folder,
                                           pythonpath=os.environ.get("PYTHONPATH", ""))}
    ratios, plain, probed = [], [], []
    for i in range(pairs):
        order = [("plain", plain_env), ("probed", probed_env)]
        got = {}
        for name, env in (order if i % 2 == 0 else order[::-1]):
            got[name], stderr = _target_run(work / f"{name}-{i}.json", env)
            if name == "probed" and '"event":"armed"' not in stderr:
                raise SystemExit(f"the probe was not armed in pair {i}: {stderr[-2000:]}")
        plain.append(got["plain"])
        probed.append(got["probed"])
        ratios.append(got["probed"] / got["plain"])
        print(f"pair {i + 1}/{pairs}: plain {got['plain']:.1f} tok/s, probed "
              f"{got['probed']:.1f} tok/s, ratio {ratios[-1]:.3f}", flush=True)
    return {"probe": PROBE, "pairs": pairs, "plain_tok_s": plain, "probed_tok_s": probed,
            "ratio_median": round(statistics.median(ratios), 4),
            "ratio_min": round(min(ratios), 4), "ratio_max": round(max(ratios), 4)}


def wrapper_overhead_us(calls: int = 200_000) -> dict:
    """The cost of one call through an armed error-mode probe over a plain call (a
    function doing nothing: the whole difference is the wrapper), median of 5 runs."""
    import timeit

    from ddlab.probes import hook

    def step(batch):
        return batch

    wrapped = hook.wrap(step, hook.Probe("bench.step", "error"), skip=0)
    plain = [timeit.timeit(lambda: step(1), number=calls) for _ in range(5)]
    armed = [timeit.timeit(lambda: wrapped(1), number=calls) for _ in range(5)]
    per_call = (statistics.median(armed) - statistics.median(plain)) / calls * 1e6
    return {"calls": calls, "runs": 5, "overhead_us": round(per_call, 3)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lossless_cost(checks: int, work: Path) -> dict:
    import httpx

    port = _free_port()
    log = open(work / "server.log", "wb")
    server = subprocess.Popen([sys.executable, "-m", "ddlab.target", "--port", str(port),
                               "--speculative-algorithm", "DDTREE", "--speculative-draft-model-path",
                               "ddlab-tiny-drafter", "--speculative-ddtree-budget", "16",
                               "--speculative-ddtree-topk-cap", "4"],
                              stdout=log, stderr=subprocess.STDOUT,
                              env={**os.environ, "OMP_NUM_THREADS": "1",
                                   "PYTHONPATH": str(ROOT / "lib")})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        else:
            raise SystemExit(f"the server was not ready in 120 s: {(work / 'server.log').read_text()[-2000:]}")
        times = []
        for _ in range(checks):
            start = time.perf_counter()
            outputs = ll.collect(base)
            times.append(time.perf_counter() - start)
        compare_start = time.perf_counter()
        ref = ll.Reference(model="m", prompts=list(ll.PROMPTS), max_new_tokens=ll.MAX_NEW_TOKENS,
                           outputs=outputs, source="bench")
        ll.compare(ref, outputs)
        compare_s = time.perf_counter() - compare_start
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    q = statistics.quantiles(times, n=4) if len(times) >= 2 else [times[0]] * 3
    return {"checks": checks, "collect_s": [round(t, 3) for t in times],
            "median_s": round(statistics.median(times), 3), "p25_s": round(q[0], 3),
            "p75_s": round(q[2], 3), "compare_s": round(compare_s, 6),
            "requests": 2 * len(ll.PROMPTS), "tokens_each": ll.MAX_NEW_TOKENS}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ab-rounds", type=int, default=15,
                   help="in-process A/B: rounds plain and rounds probed, ABBA order (0 skips)")
    p.add_argument("--pairs", type=int, default=3,
                   help="separate-process pairs of bench/target.py runs (0 skips)")
    p.add_argument("--checks", type=int, default=5, help="lossless check timings (0 skips)")
    p.add_argument("--json-out", type=Path)
    args = p.parse_args(argv)
    if args.ab_rounds == 1:
        p.error("--ab-rounds: 0 (skip) or at least 2 (an interval needs two rounds a side)")
    load_before = os.getloadavg()
    ab = ab_probe_cost(args.ab_rounds) if args.ab_rounds > 0 else None
    with tempfile.TemporaryDirectory(prefix="ddlab-probe-cost-") as tmp:
        work = Path(tmp)
        probe = probe_cost(args.pairs, work) if args.pairs > 0 else {"probe": PROBE, "pairs": 0}
        probe["wrapper"] = wrapper_overhead_us()
        if args.pairs > 0:
            rows = json.loads((work / "plain-0.json").read_text())["rows"]
            row = next(r for r in rows if r["algo"] == "DDTREE" and r["graphs"] and r["bs"] == 1)
            steps_s = row["tok_s"] / row["accept_length"]  # verify steps (probed calls) a second
        elif ab is not None:
            steps_s = ab["verify_steps_per_s"]  # measured in the A rounds
        else:
            steps_s = None
        if steps_s is not None:
            probe["verify_steps_per_s"] = round(steps_s, 1)
            probe["bound_fraction"] = round(steps_s * probe["wrapper"]["overhead_us"] * 1e-6, 6)
        check = lossless_cost(args.checks, work) if args.checks > 0 else None
    meta = {"cpus": os.cpu_count(), "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
    if ab is not None:
        print(f"== probe cost, in-process A/B: DDTREE B16 cap4 graphs bs1, probed/plain tok/s "
              f"(ratio of medians) {ab['ratio']:.4f} [95% CI {ab['ratio_ci'][0]:.4f}-"
              f"{ab['ratio_ci'][1]:.4f}], n = {ab['rounds_each']} + {ab['rounds_each']} rounds "
              f"(ABBA); per-pair ratio median {ab['pair_ratio_median']:.4f} [95% CI "
              f"{ab['pair_ratio_ci'][0]:.4f}-{ab['pair_ratio_ci'][1]:.4f}]; plain "
              f"{ab['plain_median']:.1f} tok/s, probed {ab['probed_median']:.1f} tok/s; "
              f"load average {ab['loadavg_before']} -> {ab['loadavg_after']} (goal >= 0.98)")
        print(f"   by CPU time (tokens / process CPU s, less exposed to other processes' share of "
              f"the cores): ratio of medians {ab['cpu_ratio']:.4f} [95% CI {ab['cpu_ratio_ci'][0]:.4f}-"
              f"{ab['cpu_ratio_ci'][1]:.4f}]")
        print(f"   probe armed in every B round ({min(ab['probed_calls_per_round'])}-"
              f"{max(ab['probed_calls_per_round'])} probed calls a round), no record on success; "
              f"same tokens in every round: {ab['lossless']}")
    if args.pairs > 0:
        print(f"== probe cost, separate processes: probed/plain tok/s over {probe['pairs']} "
              f"pairs: median {probe['ratio_median']:.3f} [range {probe['ratio_min']:.3f}-"
              f"{probe['ratio_max']:.3f}] (carries run-to-run noise)")
    if steps_s is not None:
        print(f"== probe cost, bound: {probe['wrapper']['overhead_us']:.2f} us per probed call x "
              f"{probe['verify_steps_per_s']:.0f} verify steps/s = {probe['bound_fraction'] * 100:.4f}% "
              "of the time (cross-check)")
    if check is not None:
        print(f"== lossless check: collect ({check['requests']} requests x {check['tokens_each']} "
              f"tokens) median {check['median_s']:.3f} s [p25-p75 {check['p25_s']:.3f}-"
              f"{check['p75_s']:.3f}] over {check['checks']}; compare {check['compare_s'] * 1e3:.2f} ms "
              "(goal <= 1 s per cell)")
    print(f"== machine: {meta['cpus']} CPUs, load average before {meta['loadavg_before']}, "
          f"after {meta['loadavg_after']}")
    line = json.dumps({"ab": ab, "probe": probe, "lossless": check, "meta": meta})
    if args.json_out:
        args.json_out.write_text(line + "\n")
    print(line)


if __name__ == "__main__":
    main()
