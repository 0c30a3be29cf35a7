#!/usr/bin/env bash
# elastic_cluster.sh OUT_DIR [RATE]: a rank SIGKILLed in the middle of training, on an emulated
# cluster of 4 hosts (one rank each; RATE default 1gbit): examples/torch/train_elastic.py (the
# Fashion-MNIST CNN under DDP), STEPS steps, rank 3 SIGKILLed at step KILL_STEP. Four jobs, each
# timed from tsrun's start to its end (start-up included):
#   tessera           no failure: the reference for elastic
#   elastic           tessera under tsrun --elastic: the survivors shrink, re-wrap DDP, go on as 3
#   gloo              no failure, a checkpoint every CKPT steps: the reference for restart
#   restart           gloo, the same checkpoints: the failure ends the job (tsrun stops the other
#                     ranks, as torchrun does), then the job is started again (as torchrun
#                     --max-restarts would) and resumes from the last checkpoint
# Writes OUT_DIR/RATE.jsonl (rank 0's lines, each tagged with its job) and prints a table: each
# job's seconds, the extra time the failure cost (elastic against tessera, restart against
# gloo), and elastic's time from the failed step's start to training again.
#
# Environment: STEPS (120), KILL_STEP (50), CKPT (20), PYTHON (a PyTorch 2.x interpreter with
# the backend built against it), TSR_BUILD (build), TSR_TIMEOUT_MS (5000), RUN_TIMEOUT_S (900).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [RATE]" >&2; exit 2; }
out=$1 rate=${2:-1gbit}
root=$(cd "$(dirname "$0")/../.." && pwd)
net=${TSR_SHARED:-$root/../shared}/tools/netcluster.sh
build=${TSR_BUILD:-$root/build}
python=${PYTHON:-$HOME/.cache/tessera/venv-torch-2.11.0/bin/python}
steps=${STEPS:-120} kill_step=${KILL_STEP:-50} ckpt=${CKPT:-20}
[ -x "$net" ] || { echo "elastic_cluster.sh: $net not found (set TSR_SHARED)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
hostfile=$(mktemp /tmp/tsr-elastic-hosts.XXXXXX)
checkpoint=$out/checkpoint.pt
cleanup() { "$net" down >/dev/null 2>&1 || true; rm -f "$hostfile" "$checkpoint" "$checkpoint.tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
for i in 0 1 2 3; do echo "tsr$i slots=1"; done >"$hostfile"
rm -f "$out/$rate.jsonl"

job() {  # NAME [tsrun options...] -- [example options...]: appends rank 0's lines, prints seconds
  local name=$1 t0 t1
  shift
  local launcher=() example=()
  while [ "$1" != -- ]; do launcher+=("$1"); shift; done
  shift
  example=("$@")
  t0=$(date +%s.%N)
  timeout "${RUN_TIMEOUT_S:-900}" "$build/bin/tsrun" "${launcher[@]}" --hostfile "$hostfile" --rsh "$net rsh" \
    -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=net0 -x GLOO_SOCKET_IFNAME=net0 -x TSR_TIMEOUT_MS="${TSR_TIMEOUT_MS:-5000}" \
    -x MASTER_ADDR=198.18.0.1 -x MASTER_PORT=29513 \
    -x PYTHONPATH="$root/bindings/python" -x TESSERA_LIBRARY="$build/lib/libtessera.so" \
    "$python" "$root/examples/torch/train_elastic.py" --steps "$steps" --log-every "$steps" "${example[@]}" 2>/dev/null |
    sed -n "s/^\[0\] {/{\"job\": \"$name\", /p" >>"$out/$rate.jsonl" || true
  t1=$(date +%s.%N)
  echo "{\"job\": \"$name\", \"wall_s\": $(awk "BEGIN {printf \"%.2f\", $t1 - $t0}")}" >>"$out/$rate.jsonl"
}

"$net" up 4 "$rate" >/dev/null
job tessera -- --backend tessera
job elastic --elastic -- --backend tessera --kill-rank 3 --kill-step "$kill_step"
rm -f "$checkpoint"
job gloo -- --backend gloo --checkpoint "$checkpoint" --checkpoint-every "$ckpt"
rm -f "$checkpoint"
job restart -- --backend gloo --checkpoint "$checkpoint" --checkpoint-every "$ckpt" --kill-rank 3 --kill-step "$kill_step"
job restart -- --backend gloo --checkpoint "$checkpoint" --checkpoint-every "$ckpt"
"$net" down >/dev/null

/usr/bin/python3 - "$out/$rate.jsonl" "$rate" "$steps" "$kill_step" "$ckpt" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
wall = {}
for l in lines:
    if "wall_s" in l:
        wall[l["job"]] = wall.get(l["job"], 0) + l["wall_s"]
again = next((l["training_again_after_s"] for l in lines if "training_again_after_s" in l), None)
acc = {l["job"]: l["test_accuracy"] for l in lines if "test_accuracy" in l}
rate, steps, kill, ckpt = sys.argv[2:6]
print(f"{rate}, {steps} steps, rank 3 killed at step {kill}, gloo checkpoints every {ckpt} steps")
print("| job | seconds | extra for the failure | test accuracy |")
print("| --- | --- | --- | --- |")
for job, ref in (("tessera", None), ("elastic", "tessera"), ("gloo", None), ("restart", "gloo")):
    extra = f"{wall[job] - wall[ref]:+.2f} s" if ref and job in wall and ref in wall else ""
    print(f"| {job} | {wall.get(job, float('nan')):.2f} | {extra} | {acc.get(job, '')} |")
if again is not None:
    print(f"elastic: training again {again:.2f} s after the failed step began")
if "restart" in wall and again:
    # Elastic's lost time is at most its recovery (a redone step included); its whole run can
    # even end sooner than the reference where the ranks share cores (3 compute faster than 4).
    r = wall["restart"] - wall["gloo"]
    print(f"lost time: restart {r:.2f} s, elastic at most {again:.2f} s: {r / again:.0f}x less")
PY
