#!/usr/bin/env bash
# The first thing to run on a machine with a GPU (issue 21, section 3):
#
#   bash bench/gpu.sh                 # ~15-25 minutes on one GPU
#   PY=/path/to/python bash bench/gpu.sh
#
# Where torch sees a CUDA device it
#   1. writes data in the real formats (tests/studies/paper_files.py: GPT-2 token arrays,
#      anndata plate files, MNIST IDX, D4RL HDF5, Planetoid/WebKB/Actor/Airports/roman-empire
#      raw files, LCBench JSON), larger than the tests' but small enough to write in a minute;
#   2. runs every study's paper profile on CUDA for a few minutes each, with the compute
#      flags of the profile's own command (Ray Train workers where it uses them), shrunk in
#      steps only where the paper's would take hours;
#   3. runs bench/optim_step.py (CPU and CUDA tables, the CUDA Muon target),
#      bench/hessian.py --device cuda (Lanczos vs dense and vs power iteration) and
#      bench/partial_ot.py --device cuda (Newton vs Sinkhorn on the GADC batches), and on
#      the host's CPU bench/newton_schulz.py and bench/egp.py --only phases;
# and prints one line per run (exit code, wall time, trials finished, primary metric) and
# the benches' ratio and PASS/FAIL lines. Everything goes to LOG_DIR (default
# runs/gpu-bench-TIME/): data/, runs/, one log per step, nvidia-smi samples every 5 s.
# Without CUDA it says so and exits 0. Exit code 1 if any step failed.
set -u
cd "$(dirname "$0")/.."
PY=${PY:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}

if ! why=$("$PY" -c 'import torch, sys
if not torch.cuda.is_available():
    build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
    sys.exit(f"torch {torch.__version__} ({build}) sees no CUDA device")
print(torch.cuda.get_device_name())' 2>&1); then
    echo "gpu.sh: no CUDA device, nothing to run (${why##*$'\n'})"
    exit 0
fi

LOG_DIR=${LOG_DIR:-runs/gpu-bench-$(date +%Y%m%d-%H%M%S)}
DATA=$LOG_DIR/data
RUNS=$LOG_DIR/runs
LIMIT=${LIMIT:-900}   # seconds any one step may take
mkdir -p "$DATA" "$RUNS"
echo "gpu.sh: $why; python $PY; logs in $LOG_DIR"
nvidia-smi --query-gpu=timestamp,name,utilization.gpu,memory.used,memory.total \
    --format=csv -l 5 >"$LOG_DIR/nvidia-smi.csv" 2>/dev/null &
SMI=$!
trap 'kill "$SMI" 2>/dev/null' EXIT

failed=0
step() {  # step NAME COMMAND...: run with a time limit, log, one line with rc and wall time
    local name=$1 start rc
    shift
    start=$(date +%s)
    timeout "$LIMIT" "$@" >"$LOG_DIR/$name.log" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || failed=1
    printf '%-28s rc=%-3s %5ss  %s\n' "$name" "$rc" "$(( $(date +%s) - start ))" \
        "$(tail -n 1 "$LOG_DIR/$name.log")"
}

step data "$PY" - "$DATA" <<'EOF'
import sys
from pathlib import Path

sys.path.insert(0, "tests/studies")
import paper_files as pf  # noqa: E402

root = Path(sys.argv[1])
pf.write_tokens(root / "tokens", seq_len=1024, rows=2048)
pf.write_tahoe_plates(root / "tahoe", plates=4, cells=25_000, genes=2000)
pf.fake_mnist(root / "mnist" / "MNIST" / "raw", n_train=60_000, n_test=10_000)
pf.write_d4rl_hopper(root / "d4rl")
pf.write_lcbench(root / "data_2k.json", datasets=[f"ds{i}" for i in range(35)], configs=100)
pf.write_raw(root / "graphs", "Cora")
pf.write_raw(root / "graphs", "USA")
pf.write_raw(root / "graphs", "roman-empire")
pf.write_geom_gcn(root / "graphs" / "WebKB" / "texas" / "raw", "texas", nodes=183,
                  features=1703)
pf.write_geom_gcn(root / "graphs" / "Actor" / "raw", "film", nodes=3000, features=932,
                  sparse=True)
print(f"data written in {root}")
EOF

paper() {  # paper STUDY NAME ARGS...: raystudy run|sweep STUDY --profile paper, then its summary
    local study=$1 name=$2 kind=run
    shift 2
    if [ "${1:-}" = sweep ]; then kind=sweep; shift; fi
    step "$name" "$PY" -m raystudy "$kind" "$study" --profile paper --storage "$RUNS" \
        --name "$name" "$@"
    [ -f "$RUNS/$name/summary.json" ] && "$PY" - "$RUNS/$name/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
name = s["primary_metric"]["name"]
values = [t["metrics"].get(name) for t in s["trials"]]
print(f"{'':28s} {s['counts']}; {name} {values}; wall {s['wall_time_s']:.0f} s")
EOF
}

paper optimizer_robustness optimizer --workers 1 --gpus-per-worker 1 \
    --set data.path="$DATA/tokens" --set train.steps=300 --set train.eval_every=100 \
    --set train.eval_batches=4
paper cell_classifier cells --workers 1 --gpus-per-worker 1 \
    --set data.path="$DATA/tahoe" --set data.val_cells=10000 --set train.eval_every=500
paper plasticity plasticity --gpus-per-worker 1 \
    --set stream.path="$DATA/mnist" --set stream.tasks=5 --set train.steps_per_task=2000
paper contrastive_imitation imitation --gpus-per-worker 1 --map-tasks 2 \
    --set data.root="$DATA/d4rl" --set train.steps=2000 --set train.disc_steps=500 \
    --set train.eval_every=1000
paper empirical_gp egp --gpus-per-worker 1 --map-tasks 4 --cpus-per-map-task 1 \
    --set task.path="$DATA/data_2k.json" --set model.iterations=10 \
    --set eval.baseline_steps=50
printf 'params:\n  data.dataset: {grid: [Cora, Texas, Actor, USA, roman-empire]}\n' >"$LOG_DIR/graphs.yaml"
paper graph_transfer graphs sweep --gpus-per-worker 0.25 --space "$LOG_DIR/graphs.yaml" \
    --set data.root="$DATA/graphs"

step optim_step "$PY" bench/optim_step.py --reps 21
grep -E "PASS|FAIL|SKIP" "$LOG_DIR/optim_step.log"
step wbmm_op timeout 300 "$PY" bench/wbmm_op.py --device cuda --pass both --reps 20 --shapes 32x160x28,32x320x14,32x640x7,16x80x56,8x64x112,4x64x224
grep -E "PASS|FAIL|SKIP" "$LOG_DIR/wbmm_op.log"
step hessian "$PY" bench/hessian.py --device cuda --parts 12
grep -E "x faster|->" "$LOG_DIR/hessian.log"
step partial_ot timeout 600 "$PY" bench/partial_ot.py --device cuda
grep -E "eps_rel" "$LOG_DIR/partial_ot.log"
# the host's CPU is one more CPU kind: the Newton-Schulz chains and the EM's phases there
step newton_schulz timeout 120 "$PY" bench/newton_schulz.py --threads 1 --reps 15
step egp_phases timeout 120 "$PY" bench/egp.py --only phases --reps 9

echo "gpu.sh: $([ "$failed" -eq 0 ] && echo 'every step finished' || echo 'SOME STEPS FAILED'); logs in $LOG_DIR"
exit "$failed"
