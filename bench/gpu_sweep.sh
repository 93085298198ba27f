#!/usr/bin/env bash
# bench/gpu_sweep.sh: the whole ddlab loop on one CUDA GPU, in one command (issue 17).
#
# `ddlab run sweep` on the built-in host `local`: every cell deploys ddlab's own
# embedded tree-speculative server (python -m ddlab.target) with --device cuda as a
# process, watches it to ready (probes + the lossless check against the
# no-speculation cell), benchmarks it, and keeps the executed notebook, its HTML
# report, the cells CSV and the store. Then `ddlab plot` saves the figures as PNG.
# docs/gpu-run/README.md holds the results of the run this script made on an H200.
#
# Usage, from anywhere, on the GPU machine (nothing is fetched from the network):
#   bench/gpu_sweep.sh smoke    # 4 cells (proves the install and the pipeline)
#   bench/gpu_sweep.sh full     # budget x cap x graphs + the 2 baselines + 5 fault cells
#   bench/gpu_sweep.sh faults   # B16 cap 4 graphs on/off, the 2 baselines, the 5 fault cells
#   DEVICE=cpu PY=.venv/bin/python bench/gpu_sweep.sh cpu   # the same grid on CPU, graphs off
#   bench/gpu_sweep.sh vllm     # issue 28: base vllm-eagle3 (the target in vLLM's dialect),
#                               # num_speculative_tokens x graphs/eager + baselines + 2 faults
#   DEVICE=cpu PY=.venv/bin/python bench/gpu_sweep.sh vllm-cpu  # the same on CPU, eager only
# Knobs (environment): OUT (results; default /tmp/gpu-sweep-out), PY (python3),
#   DEVICE (cuda), BUDGETS, CAPS, GRAPHS, REQUESTS (8), MAX_NEW_TOKENS (128),
#   REPEATS (3: rounds at least), CI_TARGET (0.05: measure until the tok/s 95% interval
#   is within +-5 %), MAX_ROUNDS (6), FAULTS (1: add the fault cells), WHEELS (1: install .whl/; cpu: 0),
#   DEADLINE_S (0: none; else the sweep gets Ctrl-C after that many seconds and
#   reports the cells it finished).
#
# What the machine needs:
# - a python3 with torch built for CUDA (the device image's: torch 2.11.0+cu130 on
#   Python 3.12). torch is never installed here.
# - ddlab's other dependencies. Those the image lacks come as wheels in .whl/
#   (ignored by git through .git/info/exclude; ~19 MB, 52 wheels for CPython 3.12,
#   manylinux x86_64), installed with --no-index into /tmp/ddlab-site. Made on a
#   machine with pip, from the repo root:
#     python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#       --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
#       --platform manylinux2014_x86_64 -d .whl -r docs/gpu-run/wheels.txt
#   docs/gpu-run/wheels.txt pins them: papermill, nbconvert, ipykernel and their needs
#   that the image does not have (the target serves HTTP from the standard library since
#   2026-12-01; the runs in docs/gpu-run before that also carried fastapi, uvicorn and
#   pydantic). With no .whl/ folder the script uses what $PY already has.
# - optionally .whl/PROVENANCE: `git rev-parse HEAD` and `git status --short` of the
#   tree, written before the tree is copied (a copy without .git cannot say it):
#     { echo "commit: $(git rev-parse HEAD)"; git status --short; } > .whl/PROVENANCE
# With the device tool: run(command="OUT=$OUT DEADLINE_S=530 bench/gpu_sweep.sh full",
#   carry=[".whl"]); the full grid took 478 s of one 600 s call on an H200.
#
# The sweep's notebook is notebooks/sweep.ipynb as it is (it declares `warmup` and
# `repeats` since the run in docs/gpu-run, which used a copy with them added).
set -uo pipefail

MODE=${1:-smoke}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PY=${PY:-python3}
OUT=${OUT:-/tmp/gpu-sweep-out}
WORK=${WORK:-/tmp/gpu-sweep-work}
SITE=${SITE:-/tmp/ddlab-site}
DEVICE=${DEVICE:-cuda}
REQUESTS=${REQUESTS:-8}
MAX_NEW_TOKENS=${MAX_NEW_TOKENS:-128}
REPEATS=${REPEATS:-3}
CI_TARGET=${CI_TARGET:-0.05}
MAX_ROUNDS=${MAX_ROUNDS:-6}
FAULTS=${FAULTS:-1}
DEADLINE_S=${DEADLINE_S:-0}
case $MODE in
  smoke) BUDGETS=${BUDGETS:-[64]} CAPS=${CAPS:-[8]} GRAPHS=${GRAPHS:-[true]} ;;
  faults) BUDGETS=${BUDGETS:-[16]} CAPS=${CAPS:-[4]} GRAPHS=${GRAPHS:-[true, false]} ;;
  full)  BUDGETS=${BUDGETS:-[4, 8, 16, 32, 64]} CAPS=${CAPS:-[1, 2, 4, 8]} GRAPHS=${GRAPHS:-[true, false]} ;;
  cpu)   BUDGETS=${BUDGETS:-[4, 8, 16, 32, 64]} CAPS=${CAPS:-[1, 2, 4, 8]} GRAPHS=${GRAPHS:-[false]}
         FAULTS=${FAULTS_CPU:-0} WHEELS=${WHEELS:-0} ;;
  vllm)  TOKENS=${TOKENS:-[1, 2, 3, 4, 6, 8]} GRAPHS=${GRAPHS:-[true, false]} ;;
  vllm-cpu) TOKENS=${TOKENS:-[1, 2, 4]} GRAPHS=${GRAPHS:-[false]} FAULTS=${FAULTS_CPU:-0} WHEELS=${WHEELS:-0} ;;
  *) echo "usage: $0 smoke|faults|full|cpu|vllm|vllm-cpu" >&2; exit 2 ;;
esac
mkdir -p "$OUT" "$WORK"
exec > >(tee "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1
T0=$(date +%s)
stamp() { echo "[gpu_sweep +$(( $(date +%s) - T0 ))s] $*"; }

# --- 1. ddlab and the wheels (no network) ------------------------------------------
PYPATH=$ROOT/lib
if [ "${WHEELS:-1}" = 1 ] && ls .whl/*.whl >/dev/null 2>&1; then
  stamp "installing $(ls .whl/*.whl | wc -l) wheels into $SITE"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$SITE" .whl/*.whl || { echo "wheel install failed"; exit 1; }
  PYPATH=$SITE:$ROOT/lib
  export JUPYTER_PATH=$SITE/share/jupyter PATH=$SITE/bin:$PATH
fi
export PYTHONPATH=$PYPATH${PYTHONPATH:+:$PYTHONPATH}
export DDLAB_OUTPUTS=$WORK/outputs
ddlab() { "$PY" -m ddlab.cli "$@"; }

# --- 2. provenance -------------------------------------------------------------------
{
  echo "# provenance of bench/gpu_sweep.sh $MODE, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  if [ -f .whl/PROVENANCE ]; then cat .whl/PROVENANCE
  else echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"; fi
  echo "lib/ sha256 of its *.py and weights here: $(find lib/ddlab -type f \( -name '*.py' -o -name '*.json' -o -name '*.safetensors' \) | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)"
  echo "host: $(uname -srm), $(nproc) cores"
  "$PY" - <<'EOF'
import sys, torch
print("python:", sys.version.split()[0], sys.executable)
print("torch:", torch.__version__, "cuda:", torch.version.cuda, "cudnn:", torch.backends.cudnn.version())
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("gpu:", p.name, f"{p.total_memory / 2**30:.1f} GiB", f"sm_{p.major}{p.minor}", p.multi_processor_count, "SMs")
import importlib.metadata as m
print("packages:", ", ".join(f"{n} {m.version(n)}" for n in
      ("papermill", "nbconvert", "ipykernel", "pandas", "matplotlib", "httpx")))
EOF
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    nvidia-smi -q | sed -n '1,30p' | grep -v -e 'Serial Number' -e 'GPU UUID' -e 'GPU PDI'
  fi
} > "$OUT/provenance.txt" 2>&1
cat "$OUT/provenance.txt"

# --- 3. parameters and the notebook -----------------------------------------------
case $MODE in vllm*) DEVKEY=flags.device ;; *) DEVKEY=device ;; esac
FIXED="{$DEVKEY: $DEVICE"
[ "$PYPATH" = "$ROOT/lib" ] || FIXED="$FIXED, env.PYTHONPATH: '$PYPATH'"  # the server's imports
FIXED="$FIXED}"
measure_params() {  # what every mode's sweep measures with
  echo "cuda_graph: $GRAPHS"
  echo "requests: $REQUESTS"
  echo "max_new_tokens: $MAX_NEW_TOKENS"
  echo "repeats: $REPEATS"
  echo "ci_target: $CI_TARGET"
  echo "max_rounds: $MAX_ROUNDS"
  echo "warmup: 1"
  echo "timeout_s: 120"
  echo "fixed: $FIXED"
}
case $MODE in vllm*) {
  # vLLM's family: its own knobs (num_speculative_tokens; graphs = not --enforce-eager), its
  # acceptance figure (mean acceptance length, from /metrics), its log dialect (issue 28)
  echo "base: vllm-eagle3"
  echo "grid: {num_speculative_tokens: $TOKENS}"
  measure_params
  if [ "$FAULTS" = 1 ]; then
    # (a) a field dropped before the graph's copy: a replay crash; (b) seq_lens skipped:
    # wrong tokens, no crash (the lossless check's case)
    echo "extra: [{flags.debug_drop_verify_field: positions}, {flags.debug_drop_verify_field: seq_lens}]"
  fi
} > "$WORK/params.yaml" ;; *)
{
  echo "budget: $BUDGETS"
  echo "topk_cap: $CAPS"
  measure_params
  if [ "$FAULTS" = 1 ]; then
    echo "extra:"
    # (a) a verify field dropped before the graph's copy: a replay crash (cuda_graph_replay)
    echo "  - {budget: 16, topk_cap: 4, cuda_graph: true, debug_drop_verify_field: num_token_non_padded, debug_drop_verify_mode: raise}"
    # (b) the same, skipped as SGLang 0.5.23's fill_from skips a None: wrong tokens, no crash
    [ "$MODE" = smoke ] || echo "  - {budget: 16, topk_cap: 4, cuda_graph: true, debug_drop_verify_field: num_token_non_padded, debug_drop_verify_mode: skip}"
    # (c) graphs sized by the block size (16) instead of B+1 (33): 0.5.23's width
    #     guard runs the verify eagerly; 0.4's copy dies on the size mismatch
    [ "$MODE" = smoke ] || echo "  - {budget: 32, topk_cap: 4, cuda_graph: true, debug_graph_tokens_per_req: 16}"
    [ "$MODE" = smoke ] || echo "  - {budget: 32, topk_cap: 4, cuda_graph: true, debug_graph_tokens_per_req: 16, log_format: '0.4'}"
    # (d) graph capture out of memory: the KV pool takes the static fraction of the
    #     GPU (no request cap), the graphs are sized for as many requests, and what is
    #     left (1 - mem_fraction_static) cannot hold their static buffers
    echo "  - {budget: 16, topk_cap: 4, cuda_graph: true, max_running_requests: 1000000, cuda_graph_max_bs_decode: 1000000}"
  fi
} > "$WORK/params.yaml" ;;
esac
stamp "parameters:"; cat "$WORK/params.yaml"
cp "$ROOT/notebooks/sweep.ipynb" "$WORK/sweep.ipynb"  # the project's notebook as it is

# --- 4. the sweep ------------------------------------------------------------------
stamp "ddlab run sweep ($MODE)"
if [ "$DEADLINE_S" -gt 0 ]; then LIMIT=(timeout -s INT -k 60 "$DEADLINE_S"); else LIMIT=(); fi
"${LIMIT[@]}" "$PY" -m ddlab.cli run "$WORK/sweep.ipynb" -f "$WORK/params.yaml" --name "gpu-$MODE" \
    | tee "$WORK/run.out"
RC=$?
stamp "ddlab run exited $RC"
REPORT=$(tail -1 "$WORK/run.out")
RUN_DIR=$(dirname "$REPORT")

# --- 5. figures, the cells with every metric, and what comes back ------------------
ddlab plot --out "$WORK/figures" || true
"$PY" - "$OUT/metrics.csv" <<'EOF'
import sys, pandas as pd
from ddlab.sweeps.store import Store
from ddlab.sweeps.results import load_cells
store = Store(); sweep = store.latest_sweep_id()
frame = load_cells(sweep, store=store)
rows = []
for cell in store.cells(sweep):
    v = cell.get("verdict") or {}
    rows.append({"position": cell["position"], "state": v.get("state"), "kind_verdict": v.get("kind"),
                 "headline": v.get("headline"), "lossless": (v.get("lossless") or {}).get("summary"),
                 **{f"m.{k}": x for k, x in (cell.get("metrics") or {}).items()}})
frame.merge(pd.DataFrame(rows), on="position", how="left").to_csv(sys.argv[1], index=False)
print(f"metrics.csv: {len(rows)} cells of {sweep}")
EOF
for f in sweep.ipynb report.html cells.csv; do cp "$RUN_DIR/$f" "$OUT/$f" 2>/dev/null || echo "missing: $f"; done
cp "$WORK/params.yaml" "$WORK/figures" 2>/dev/null
tar -C "$WORK" -czf "$OUT/bundle.tar.gz" figures params.yaml sweep.ipynb \
    -C "$DDLAB_OUTPUTS" sweeps references ddlab.sqlite \
    -C "$RUN_DIR" run.json verdict.json 2>/dev/null
stamp "done: $(ls "$OUT" | tr '\n' ' ')"
exit $RC
