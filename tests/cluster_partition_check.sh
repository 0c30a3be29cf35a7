#!/usr/bin/env bash
# A host cut off the network mid-job (its link taken down: no FIN, no RST, nothing more from
# it), on the emulated cluster: every other rank's pending allreduce must fail within the
# timeout with TSR_ERR_TIMEOUT naming the lost rank and its host, and the job must end.
#   cluster_partition_check.sh BUILD_DIR [N [RATE [TIMEOUT_MS]]]
# Skipped (exit 77) where network namespaces cannot be made (not root, no ip netns).
set -uo pipefail
build=$1 n=${2:-4} rate=${3:-1gbit} timeout_ms=${4:-4000}
lost=$((n / 2))
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
  echo "skipped: needs root and ip netns"; exit 77
fi
net=${TSR_SHARED:-$here/../../shared}/tools/netcluster.sh
[ -x "$net" ] || { echo "FAIL: $net not found (set TSR_SHARED)"; exit 1; }
log=$(mktemp /tmp/tsr-partition-log.XXXXXX)
hostfile=$(mktemp /tmp/tsr-partition-hosts.XXXXXX)
child=
teardown() {  # the job's whole session, then the cluster, on any exit or signal
  if [ -n "$child" ]; then
    pkill -KILL -s "$child" 2>/dev/null
    wait "$child" 2>/dev/null
  fi
  "$net" down >/dev/null 2>&1 || true
  rm -f "$log" "$hostfile"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

for ((i = 0; i < n; i++)); do echo "tsr$i slots=1"; done >"$hostfile"
"$net" up "$n" "$rate" >/dev/null || { echo "FAIL: netcluster.sh up $n $rate"; exit 1; }
# Enough 16 MiB allreduces to outlast the test by far: only the failure can end the job early.
setsid timeout 120 "$build/bin/tsrun" --hostfile "$hostfile" --rsh "$net rsh" \
  -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=net0 -x TSR_TIMEOUT_MS="$timeout_ms" \
  "$build/bin/tsr-bench" -b 16M -e 16M -n 2000 -w 1 -c 0 >"$log" 2>&1 &
child=$!

# Cut once the ranks are in the sweep (its table header printed), one second into it.
for _ in $(seq 1 600); do
  grep -q 'size(B)' "$log" && break
  kill -0 "$child" 2>/dev/null || break
  sleep 0.1
done
grep -q 'size(B)' "$log" || { cat "$log"; echo "FAIL: the job never started its sweep"; exit 1; }
sleep 1
kill -0 "$child" 2>/dev/null || { cat "$log"; echo "FAIL: the job ended before the cut"; exit 1; }
cut=$(date +%s%N)
ip -n "tsr$lost" link set net0 down
wait "$child"
status=$?
child=
took_ms=$((($(date +%s%N) - cut) / 1000000))
cat "$log"
echo "job ended ${took_ms} ms after the cut, status $status"

fail=0
[ "$status" != 0 ] || { echo "FAIL: the job exited 0 after losing rank $lost"; fail=1; }
# The timeout, plus the time tsrun takes to stop the others once one rank has failed.
limit_ms=$((timeout_ms + 8000))
[ "$took_ms" -le "$limit_ms" ] || { echo "FAIL: the job took ${took_ms} ms to end (limit ${limit_ms} ms)"; fail=1; }
for ((r = 0; r < n; r++)); do
  [ "$r" = "$lost" ] && continue
  grep -E "^\[$r\] .*TSR_ERR_TIMEOUT.*rank $lost \(tsr$lost\)" "$log" >/dev/null ||
    { echo "FAIL: rank $r did not report TSR_ERR_TIMEOUT naming rank $lost (tsr$lost)"; fail=1; }
done
exit $fail
