#!/usr/bin/env bash
# covap_overlap_cluster.sh N RATE BUILD_DIR [overlap args...]: example-covap-overlap on an
# emulated cluster of N hosts (../shared/tools/netcluster.sh: namespaces tsr0..tsrN-1, links
# shaped to RATE, e.g. 100mbit), one rank per host, TCP only (UCX's shared memory would bypass
# the shaped links). The cluster is always torn down (trap), and the run is bounded
# (OVERLAP_TIMEOUT_S, default 240). Refuses to run (exit 75) when tsr* namespaces already exist:
# someone else's cluster is up. Skipped (exit 77) without root or ip netns.
#   examples/covap_overlap_cluster.sh 4 100mbit build --max-ratio 0.8
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: $0 N RATE BUILD_DIR [overlap args...]" >&2; exit 2; }
n=$1 rate=$2 build=$3; shift 3
root=$(cd "$(dirname "$0")/.." && pwd)
net=${TSR_SHARED:-$root/../shared}/tools/netcluster.sh
if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1 || [ ! -x "$net" ]; then
  echo "skipped: needs root, ip netns and $net"; exit 77
fi
if ip netns list | grep -qE '^tsr'; then
  echo "covap_overlap_cluster: tsr* namespaces exist (another cluster is up): $(ip netns list | grep -E '^tsr' | tr '\n' ' ')" >&2
  exit 75
fi
hostfile=$(mktemp /tmp/tsr-overlap-hosts.XXXXXX)
cleanup() { "$net" down >/dev/null 2>&1 || true; rm -f "$hostfile"; }
trap cleanup EXIT
trap 'exit 130' INT TERM
for ((i = 0; i < n; i++)); do echo "tsr$i slots=1"; done >"$hostfile"
"$net" up "$n" "$rate" >/dev/null || { echo "covap_overlap_cluster: netcluster up $n $rate failed" >&2; exit 1; }
timeout "${OVERLAP_TIMEOUT_S:-240}" "$build/bin/tsrun" --hostfile "$hostfile" --rsh "$net rsh" \
  -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=net0 "$build/bin/example-covap-overlap" "$@"
status=$?
cleanup
trap - EXIT
leftover=$(ip netns list | grep -E '^tsr' || true)
[ -z "$leftover" ] || { echo "FAIL: namespaces left behind: $leftover"; exit 1; }
exit $status
