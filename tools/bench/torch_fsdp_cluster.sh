#!/usr/bin/env bash
# torch_fsdp_cluster.sh OUT_DIR [RATE...]: FSDP2 (examples/torch/train_fsdp2.py: the
# Fashion-MNIST CNN, every layer sharded with fully_shard) on an emulated cluster of 4 hosts,
# one rank each, at each RATE (default 100mbit 1gbit), over gloo and over the tessera backend,
# REPS times each, the two alternating in one sitting. Per rate: OUT_DIR/RATE.jsonl (rank 0's
# line per run) and a table on stdout (median training seconds; tessera against gloo).
#
# Environment: STEPS (100), BATCH (64 per rank), REPS (3), PYTHON (a PyTorch 2.x interpreter
# with the backend built against it: scripts/build_torch_backend.sh), TSR_BUILD (build),
# RUN_TIMEOUT_S (1800 per run). The cluster is always torn down.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [RATE...]" >&2; exit 2; }
out=$1; shift
rates=("$@")
[ $# -gt 0 ] || rates=(100mbit 1gbit)
root=$(cd "$(dirname "$0")/../.." && pwd)
net=${TSR_SHARED:-$root/../shared}/tools/netcluster.sh
build=${TSR_BUILD:-$root/build}
python=${PYTHON:-$HOME/.cache/tessera/venv-torch-2.11.0/bin/python}
unset TSR_BUILD TSR_SHARED
[ -x "$net" ] || { echo "torch_fsdp_cluster.sh: $net not found (set TSR_SHARED)" >&2; exit 2; }
"$python" -c "import torch.distributed.fsdp as f; f.fully_shard" 2>/dev/null ||
  { echo "torch_fsdp_cluster.sh: $python has no FSDP2 (PyTorch 2.6 or later)" >&2; exit 2; }
mkdir -p "$out"
hostfile=$(mktemp /tmp/tsr-fsdp-hosts.XXXXXX)
cleanup() { "$net" down >/dev/null 2>&1 || true; rm -f "$hostfile"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
for i in 0 1 2 3; do echo "tsr$i slots=1"; done >"$hostfile"

run() {  # RATE BACKEND: appends rank 0's JSON line to OUT_DIR/RATE.jsonl
  local rate=$1 backend=$2
  # gloo meets through rank 0's TCPStore on tsr0 and talks over net0; Tessera goes over TCP
  # only (UCX's shared memory would bypass the shaped links).
  timeout "${RUN_TIMEOUT_S:-1800}" "$build/bin/tsrun" --hostfile "$hostfile" --rsh "$net rsh" \
    -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=net0 -x GLOO_SOCKET_IFNAME=net0 \
    -x MASTER_ADDR=198.18.0.1 -x MASTER_PORT=29512 \
    -x PYTHONPATH="$root/bindings/python" -x TESSERA_LIBRARY="$build/lib/libtessera.so" \
    "$python" "$root/examples/torch/train_fsdp2.py" --backend "$backend" --steps "${STEPS:-100}" \
    --batch "${BATCH:-64}" | sed -n 's/^\[0\] {/{/p' >>"$out/$rate.jsonl" || echo "## $backend at $rate failed" >&2
}

for rate in "${rates[@]}"; do
  "$net" up 4 "$rate" >/dev/null
  rm -f "$out/$rate.jsonl"
  for _ in $(seq "${REPS:-3}"); do
    run "$rate" gloo
    run "$rate" tessera
  done
  "$net" down >/dev/null
  /usr/bin/python3 - "$out/$rate.jsonl" "$rate" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
med = {b: statistics.median(r["seconds"] for r in runs if r["backend"] == b) for b in ("gloo", "tessera")}
acc = {b: [r["test_accuracy"] for r in runs if r["backend"] == b] for b in ("gloo", "tessera")}
print(f"| {sys.argv[2]} | {runs[0]['steps']} | {med['gloo']:.2f} | {med['tessera']:.2f} | "
      f"{med['gloo'] / med['tessera']:.2f}x | {acc['gloo'][0]} / {acc['tessera'][0]} |")
PY
done
