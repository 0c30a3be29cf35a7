#!/usr/bin/env bash
# CI check on the emulated cluster: a short tsr-bench correctness pass (-c 1, a few sizes) on
# N hosts at RATE through tools/bench/cluster.sh, which always tears the cluster down.
#   cluster_check.sh N RATE BUILD_DIR [RANKS_PER_HOST [ALGOS]]
# ALGOS: space-separated --algo values (default auto), all run in the same cluster session;
# each must check clean.
# Skipped (exit 77) where network namespaces cannot be made (not root, no ip netns).
set -uo pipefail
n=$1 rate=$2 build=$3 per=${4:-1} algos=${5:-auto}
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
  echo "skipped: needs root and ip netns"; exit 77
fi
out=$(RANKS_PER_HOST=$per SIZES_MIB=1,4 PEERS=0 TSR_BUILD=$build BENCH_TIMEOUT_S=120 ALGOS=$algos \
      "$here/../cluster.sh" "$n" "$rate" -c 1 -d f32 2>&1)
status=$?
echo "$out"
leftover=$(ip netns list | grep -E '^tsr' || true)
[ -z "$leftover" ] || { echo "FAIL: namespaces left behind: $leftover"; exit 1; }
[ $status = 0 ] || { echo "FAIL: cluster.sh exited $status"; exit 1; }
want=$(echo $algos | wc -w)
clean=$(echo "$out" | grep -c "Out of bounds values : 0 OK")
[ "$clean" = "$want" ] || { echo "FAIL: $clean clean results for $want algorithms ($algos)"; exit 1; }
echo "$out" | grep -q "hosts tsr0..tsr$((n - 1))" || { echo "FAIL: ranks did not run on tsr0..tsr$((n - 1))"; exit 1; }
