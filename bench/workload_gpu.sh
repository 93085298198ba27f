#!/usr/bin/env bash
# bench/workload_gpu.sh OUT_DIR: speculation under load (issue 27) on one CUDA GPU.
#
# The workload sweep of the embedded target (python -m ddlab.target --device cuda, on
# the built-in host `local`): 3 DDTree configs (budget 4, 16, 32; cap 4; graphs on) and
# the no-speculation baseline, each server started once and measured at every
# concurrency level (default 1, 4, 16, 32, 64), each level to its own 95 % interval;
# acceptance per shipped prompt set (chat, code, math) from the server's counters. It
# runs notebooks/sweep.ipynb with `ddlab run` and leaves in OUT_DIR:
#   report.html, sweep.ipynb (executed), verdict.json (the crossover per config, best
#   per level, accept length per set), cells.csv, levels.csv (a row per cell and level),
#   figures/ (pareto.png, speedup-by-concurrency.png and the sweep's own), provenance.txt,
#   log.txt, bundle.tar.gz (the store and every cell's evidence).
#
# Usage, from anywhere, on the GPU machine (nothing is fetched from the network):
#   bench/workload_gpu.sh /tmp/workload-out
# With the device tool (the tree copied; .whl/ carried as for bench/gpu_sweep.sh):
#   run(command="bench/workload_gpu.sh $OUT", carry=[".whl"], timeout_s=600)
# The plan line says the bound before it starts: with the defaults, 4 cells x 5 levels
# = 20 measurements of at most MAX_TIME_S (15 s) each, i.e. at most 5 min of measuring
# plus 4 server starts and the acceptance passes; DEADLINE_S (540) sends Ctrl-C to the
# sweep in time for ddlab to report what it finished inside one 600 s call.
# Knobs (environment): PY (python3), DEVICE (cuda), BUDGETS ([4, 16, 32]), CAPS ([4]),
#   GRAPHS ([true]), LEVELS ([1, 4, 16, 32, 64]), PROMPTS ([chat, code, math]),
#   REQUESTS (16: per round at least; a level of c sends max(REQUESTS, c)),
#   MAX_NEW_TOKENS (128), CI_TARGET (0.05), MAX_ROUNDS (6), MAX_TIME_S (15),
#   BRACKET (false), DEADLINE_S (540; 0: none), WHEELS (1: install .whl/ if present).
# On CPU, for a rehearsal: DEVICE=cpu GRAPHS='[false]' LEVELS='[1, 2, 4]' PY=.venv/bin/python \
#   bench/workload_gpu.sh /tmp/workload-cpu
set -uo pipefail

OUT=${1:?usage: bench/workload_gpu.sh OUT_DIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PY=${PY:-python3}
WORK=${WORK:-$OUT/work}
SITE=${SITE:-/tmp/ddlab-site}
DEVICE=${DEVICE:-cuda}
BUDGETS=${BUDGETS:-[4, 16, 32]}
CAPS=${CAPS:-[4]}
GRAPHS=${GRAPHS:-[true]}
LEVELS=${LEVELS:-[1, 4, 16, 32, 64]}
PROMPTS=${PROMPTS:-[chat, code, math]}
REQUESTS=${REQUESTS:-16}
MAX_NEW_TOKENS=${MAX_NEW_TOKENS:-128}
CI_TARGET=${CI_TARGET:-0.05}
MAX_ROUNDS=${MAX_ROUNDS:-6}
MAX_TIME_S=${MAX_TIME_S:-15}
BRACKET=${BRACKET:-false}
DEADLINE_S=${DEADLINE_S:-540}
mkdir -p "$WORK"
exec > >(tee "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1
T0=$(date +%s)
stamp() { echo "[workload_gpu +$(( $(date +%s) - T0 ))s] $*"; }

# --- ddlab and the wheels (no network), as bench/gpu_sweep.sh --------------------------
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

{
  echo "# provenance of bench/workload_gpu.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  if [ -f .whl/PROVENANCE ]; then cat .whl/PROVENANCE
  else echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"; fi
  echo "host: $(uname -srm), $(nproc) cores"
  "$PY" -c 'import sys, torch; print("python:", sys.version.split()[0]); print("torch:", torch.__version__, "cuda:", torch.version.cuda); print("gpu:", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")'
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
} > "$OUT/provenance.txt" 2>&1
cat "$OUT/provenance.txt"

# --- the parameters and the notebook as it is ----------------------------------------
FIXED="{device: $DEVICE"
[ "$PYPATH" = "$ROOT/lib" ] || FIXED="$FIXED, env.PYTHONPATH: '$PYPATH'"  # the server's imports
FIXED="$FIXED}"
cat > "$WORK/params.yaml" <<EOF
budget: $BUDGETS
topk_cap: $CAPS
cuda_graph: $GRAPHS
concurrency: $LEVELS
prompts: $PROMPTS
requests: $REQUESTS
max_new_tokens: $MAX_NEW_TOKENS
ci_target: $CI_TARGET
max_rounds: $MAX_ROUNDS
max_time_s: $MAX_TIME_S
bracket: $BRACKET
warmup: 2
timeout_s: 180
fixed: $FIXED
EOF
stamp "parameters:"; cat "$WORK/params.yaml"

stamp "ddlab run sweep (workload)"
if [ "$DEADLINE_S" -gt 0 ]; then LIMIT=(timeout -s INT -k 60 "$DEADLINE_S"); else LIMIT=(); fi
"${LIMIT[@]}" "$PY" -m ddlab.cli run notebooks/sweep.ipynb -f "$WORK/params.yaml" \
    --name workload | tee "$WORK/run.out"
RC=${PIPESTATUS[0]}
stamp "ddlab run exited $RC"
RUN_DIR=$(dirname "$(tail -1 "$WORK/run.out")")

ddlab plot --out "$OUT/figures" || true
for f in sweep.ipynb report.html verdict.json cells.csv levels.csv; do
  cp "$RUN_DIR/$f" "$OUT/$f" 2>/dev/null || echo "missing: $f"
done
tar -C "$DDLAB_OUTPUTS" -czf "$OUT/bundle.tar.gz" sweeps references ddlab.sqlite 2>/dev/null
"$PY" - "$OUT/verdict.json" <<'EOF'
import json, sys
v = json.load(open(sys.argv[1]))
print(v["headline"])
for line in v["details"]:
    print("  " + line)
EOF
stamp "done: $(ls "$OUT" | tr '\n' ' ')"
exit $RC
