"""What seeing inside the verify path costs: an on-error probe, and the lossless check.

Usage: ``python bench/probe_cost.py [--pairs 3] [--checks 5] [--json-out FILE]``.

1. **On-error probe.** ``bench/target.py --quick`` runs twice per pair, once
   plain and once with the probe the replay crash suggests armed through the
   hook's own files and environment (``ddlab.probes``: ``sitecustomize.py`` on
   PYTHONPATH, ``DDLAB_PROBES``), alternating which goes first, so a shared
   machine's load falls on both alike. The figure is DDTREE (B16, cap 4, graphs
   on, bs 1) tok/s, probed over plain, per pair: median and range over the
   pairs. The probed run must log the probe ``armed`` (else it measured nothing).
2. **Lossless check.** A DDTREE target server is started; ``lossless.collect``
   (the shipped prompts, each alone then all in one batch, greedy, 32 tokens)
   runs ``--checks`` times: median and quartiles of its wall time. ``compare``
   itself is pure Python over a few hundred ids (microseconds).

Prints a card, then one JSON line.
"""

from __future__ import annotations

import argparse
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
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--checks", type=int, default=5)
    p.add_argument("--json-out", type=Path)
    args = p.parse_args(argv)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ddlab-probe-cost-") as tmp:
        work = Path(tmp)
        probe = probe_cost(args.pairs, work)
        probe["wrapper"] = wrapper_overhead_us()
        rows = json.loads((work / "plain-0.json").read_text())["rows"]
        row = next(r for r in rows if r["algo"] == "DDTREE" and r["graphs"] and r["bs"] == 1)
        steps_s = row["tok_s"] / row["accept_length"]  # verify steps (probed calls) a second
        probe["verify_steps_per_s"] = round(steps_s, 1)
        probe["bound_fraction"] = round(steps_s * probe["wrapper"]["overhead_us"] * 1e-6, 6)
        check = lossless_cost(args.checks, work)
    meta = {"cpus": os.cpu_count(), "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
    print(f"== probe cost: DDTREE B16 cap4 graphs bs1, probed/plain tok/s over {probe['pairs']} "
          f"pairs: median {probe['ratio_median']:.3f} [range {probe['ratio_min']:.3f}-"
          f"{probe['ratio_max']:.3f}] (goal >= 0.98)")
    print(f"== probe cost, bound: {probe['wrapper']['overhead_us']:.2f} us per probed call x "
          f"{probe['verify_steps_per_s']:.0f} verify steps/s = {probe['bound_fraction'] * 100:.4f}% "
          "of the time (the tok/s ratio above is within this machine's noise)")
    print(f"== lossless check: collect ({check['requests']} requests x {check['tokens_each']} "
          f"tokens) median {check['median_s']:.3f} s [p25-p75 {check['p25_s']:.3f}-"
          f"{check['p75_s']:.3f}] over {check['checks']}; compare {check['compare_s'] * 1e3:.2f} ms "
          "(goal <= 1 s per cell)")
    print(f"== machine: {meta['cpus']} CPUs, load average before {meta['loadavg_before']}, "
          f"after {meta['loadavg_after']}")
    line = json.dumps({"probe": probe, "lossless": check, "meta": meta})
    if args.json_out:
        args.json_out.write_text(line + "\n")
    print(line)


if __name__ == "__main__":
    main()
