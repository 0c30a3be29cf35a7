#!/usr/bin/env bash
# torch_cluster.sh OUT_DIR [RATE...]: the Fashion-MNIST CNN (examples/torch/train_fashion_mnist.py)
# under PyTorch DDP on an emulated cluster of 4 hosts, one rank each, at each RATE (default
# 100mbit 1gbit), every configuration in one sitting: DDP over gloo (DDP's allreduce, PyTorch's
# fp16 hook, PowerSGD at rank 2 and 4 on one bucket: more abort inside gloo in torch 1.13), DDP
# over the tessera backend, and each Tessera hook. Per rate: OUT_DIR/RATE.jsonl (the trainer's
# lines), OUT_DIR/RATE.png (test accuracy against training time) and OUT_DIR/RATE.md (the table:
# time to dense DDP's final accuracy minus 1 point, against DDP over gloo).
#
# Environment: EPOCHS (3), TRAIN_LIMIT (0: all 60000 images), TEST_LIMIT (0), EVALS (2 per
# epoch), SEED (1), CONFIGS (space-separated backend/hook, default all; backend/hook:KEY=VALUE,...
# passes the hook's parameters, e.g. tessera/topk:density=0.01), TSR_BUILD (build),
# RUN_TIMEOUT_S (3600 per configuration), PYTHON (/usr/bin/python3: Debian's PyTorch 1.13; a
# virtual environment's python for PyTorch 2.x, with the backend built against it:
# scripts/build_torch_backend.sh). The cluster is always torn down.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [RATE...]" >&2; exit 2; }
out=$1; shift
rates=("${@:-100mbit}")
[ $# -gt 0 ] || rates=(100mbit 1gbit)
root=$(cd "$(dirname "$0")/../.." && pwd)
net=${TSR_SHARED:-$root/../shared}/tools/netcluster.sh
build=${TSR_BUILD:-$root/build}
configs=${CONFIGS:-"gloo/none gloo/fp16 gloo/powersgd-r2 gloo/powersgd-r4 tessera/none tessera/dense tessera/marsit tessera/spardl tessera/topk tessera/onebit tessera/covap tessera/covap:local=1 tessera/auto tessera/selsync"}
unset TSR_BUILD TSR_SHARED
[ -x "$net" ] || { echo "torch_cluster.sh: $net not found (set TSR_SHARED)" >&2; exit 2; }
python=${PYTHON:-/usr/bin/python3}
torch_version=$("$python" -c "import torch; print(torch.__version__)") ||
  { echo "torch_cluster.sh: $python has no torch" >&2; exit 2; }
ls "$build/lib/torch/$torch_version"/_tessera_torch*.so >/dev/null ||
  { echo "torch_cluster.sh: $build has no torch backend for PyTorch $torch_version (scripts/build_torch_backend.sh $python)" >&2; exit 2; }
mkdir -p "$out"
hostfile=$(mktemp /tmp/tsr-torch-hosts.XXXXXX)
cleanup() { "$net" down >/dev/null 2>&1 || true; rm -f "$hostfile"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
for i in 0 1 2 3; do echo "tsr$i slots=1"; done >"$hostfile"

run() {  # RATE BACKEND HOOK[:KEY=VALUE,...] [extra trainer args]
  local rate=$1 backend=$2 spec=$3 params=; shift 3
  local hook=${spec%%:*}
  [[ $spec != *:* ]] || params=${spec#*:}
  local label="$backend/$spec" args=(--backend "$backend" --hook "${hook%%-r*}")
  [[ $hook != powersgd-r* ]] || args+=(--powersgd-rank "${hook##*-r}")
  local kv
  for kv in ${params//,/ }; do args+=(--hook-param "$kv"); done
  echo "## $label at $rate"
  # gloo meets through rank 0's TCPStore on tsr0 and talks over net0; the tessera backend needs
  # no store (tsrun's launch), and Tessera goes over TCP only (UCX's shared memory would
  # bypass the shaped links).
  local store=()
  [ "$backend" != gloo ] || store=(-x MASTER_ADDR=198.18.0.1 -x MASTER_PORT=29511)
  timeout "${RUN_TIMEOUT_S:-3600}" "$build/bin/tsrun" --hostfile "$hostfile" --rsh "$net rsh" \
    -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=net0 -x GLOO_SOCKET_IFNAME=net0 "${store[@]}" \
    -x PYTHONPATH="$root/bindings/python" -x TESSERA_LIBRARY="$build/lib/libtessera.so" \
    "$python" "$root/examples/torch/train_fashion_mnist.py" "${args[@]}" --label "$label" \
    --epochs "${EPOCHS:-3}" --train-limit "${TRAIN_LIMIT:-0}" --test-limit "${TEST_LIMIT:-0}" \
    --evals-per-epoch "${EVALS:-2}" --seed "${SEED:-1}" --json "$out/$rate.jsonl" "$@" ||
    echo "## $label at $rate failed ($?)"
}

for rate in "${rates[@]}"; do
  "$net" up 4 "$rate" >/dev/null
  rm -f "$out/$rate.jsonl"
  for c in $configs; do run "$rate" "${c%%/*}" "${c#*/}"; done
  "$net" down >/dev/null
  /usr/bin/python3 "$root/examples/torch/plot_runs.py" "$out/$rate.jsonl" "$out/$rate.png" \
    "Fashion-MNIST CNN, 4 emulated hosts at $rate" | tee "$out/$rate.md"
done
