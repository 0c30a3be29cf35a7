#!/usr/bin/env bash
# elastic_cluster.sh OUT_DIR [RATE]: a rank SIGKILLed in the middle of training, on an emulated
# cluster of 4 hosts (one rank each; RATE default 1gbit): examples/torch/train_elastic.py (the
# Fashion-MNIST CNN under DDP), STEPS steps, rank 3 SIGKILLed at step KILL_STEP. Five jobs, each
# timed from tsrun's start to its end (start-up included), REPEATS times (seed = repeat):
#   tessera           no failure: the reference for elastic and respawn
#   elastic           tessera under tsrun --elastic: the survivors shrink, re-wrap DDP, go on as 3
#   respawn           tessera under tsrun --respawn 1: the same, and the killed rank is started
#                     again, joins (the survivors grow at a step's start), takes the state by
#                     broadcast, and the job goes on as 4
#   gloo              no failure, a checkpoint every CKPT steps: the reference for restart
#   restart           gloo, the same checkpoints: the failure ends the job (tsrun stops the other
#                     ranks, as torchrun does), then the job is started again (as torchrun
#                     --max-restarts would) and resumes from the last checkpoint
# Writes OUT_DIR/RATE.jsonl (rank 0's lines and the replacement's, each tagged with its job and
# repeat) and prints the tables of tools/bench/elastic_summary.py (medians: seconds, extra time
# for the failure, the recovery's phases, accuracy) and plots loss against wall time to
# OUT_DIR/RATE.png.
#
# Environment: STEPS (120), KILL_STEP (50), CKPT (20), REPEATS (1), PYTHON (a PyTorch 2.x
# interpreter with the backend built against it), TSR_BUILD (build), TSR_TIMEOUT_MS (5000),
# RUN_TIMEOUT_S (900).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [RATE]" >&2; exit 2; }
out=$1 rate=${2:-1gbit}
root=$(cd "$(dirname "$0")/../.." && pwd)
net=${TSR_SHARED:-$root/../shared}/tools/netcluster.sh
build=${TSR_BUILD:-$root/build}
python=${PYTHON:-$HOME/.cache/tessera/venv-torch-2.11.0/bin/python}
steps=${STEPS:-120} kill_step=${KILL_STEP:-50} ckpt=${CKPT:-20} repeats=${REPEATS:-1}
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

job() {  # NAME [tsrun options...] -- [example options...]: appends rank 0's lines and the wall time
  local name=$1 t0 t1 tag
  shift
  local launcher=() example=()
  while [ "$1" != -- ]; do launcher+=("$1"); shift; done
  shift
  example=("$@")
  t0=$(date +%s.%N)
  tag="\"job\": \"$name\", \"repeat\": $repeat, \"t0\": $t0, "
  timeout "${RUN_TIMEOUT_S:-900}" "$build/bin/tsrun" "${launcher[@]}" --hostfile "$hostfile" --rsh "$net rsh" \
    -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=net0 -x GLOO_SOCKET_IFNAME=net0 -x TSR_TIMEOUT_MS="${TSR_TIMEOUT_MS:-5000}" \
    -x MASTER_ADDR=198.18.0.1 -x MASTER_PORT=29513 \
    -x PYTHONPATH="$root/bindings/python" -x TESSERA_LIBRARY="$build/lib/libtessera.so" \
    "$python" "$root/examples/torch/train_elastic.py" --steps "$steps" --log-every 5 --seed "$((repeat + 1))" \
    "${example[@]}" 2>/dev/null |
    sed -n -e "s/^\[0\] {/{$tag/p" -e "s/^\[[0-9]*\] {\"replacement/{$tag\"replacement/p" >>"$out/$rate.jsonl" || true
  t1=$(date +%s.%N)
  echo "{$tag\"wall_s\": $(awk "BEGIN {printf \"%.2f\", $t1 - $t0}")}" >>"$out/$rate.jsonl"
}

"$net" up 4 "$rate" >/dev/null
for repeat in $(seq 0 $((repeats - 1))); do
  job tessera -- --backend tessera
  job elastic --elastic -- --backend tessera --kill-rank 3 --kill-step "$kill_step"
  job respawn --respawn 1 -- --backend tessera --kill-rank 3 --kill-step "$kill_step"
  rm -f "$checkpoint"
  job gloo -- --backend gloo --checkpoint "$checkpoint" --checkpoint-every "$ckpt"
  rm -f "$checkpoint"
  job restart -- --backend gloo --checkpoint "$checkpoint" --checkpoint-every "$ckpt" --kill-rank 3 --kill-step "$kill_step"
  job restart -- --backend gloo --checkpoint "$checkpoint" --checkpoint-every "$ckpt"
done
"$net" down >/dev/null

/usr/bin/python3 "$root/tools/bench/elastic_summary.py" "$out/$rate.jsonl" "$rate" "$steps" "$kill_step" "$ckpt" "$out/$rate.png"
