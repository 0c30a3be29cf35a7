#!/usr/bin/env bash
# A network partition on the emulated cluster (4 hosts, a rank each, under tsrun --elastic):
# every rank runs fault_worker shrink-cut (16 MiB allreduces until one fails, then
# Communicator::shrink), and the partition is made while they run:
#   3|1: tsr3's link taken down: ranks 0, 1, 2 must shrink to a communicator of 3 (ranked in
#        order, an exact allreduce); rank 3 must stop with "not a majority".
#   2|2: the switch split into two bridges, {tsr0, tsr1} and {tsr2, tsr3}, each half still
#        whole: every rank must stop with "not a majority" (neither side may go on alone).
#   cluster_shrink_check.sh BUILD_DIR SPLIT [RATE [TIMEOUT_MS]]
# Skipped (exit 77) where network namespaces cannot be made (not root, no ip netns).
set -uo pipefail
build=$1 split=${2:-3-1} rate=${3:-1gbit} timeout_ms=${4:-3000}
here=$(cd "$(dirname "$0")" && pwd)
case $split in
  3-1) lost=3 ;;
  2-2) lost=2,3 ;;
  *) echo "usage: $0 BUILD_DIR 3-1|2-2 [RATE [TIMEOUT_MS]]"; exit 2 ;;
esac
. "$here/cluster_common.sh"
cluster_up shrink 4 "$rate"
setsid timeout 120 "$build/bin/tsrun" --elastic --hostfile "$hostfile" --rsh "$net rsh" \
  -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=net0 -x TSR_TIMEOUT_MS="$timeout_ms" \
  "$build/bin/fault_worker" shrink-cut "$lost" >"$log" 2>&1 &
child=$!
for _ in $(seq 1 600); do
  [ "$(grep -c 'up and allreducing' "$log")" = 4 ] && break
  kill -0 "$child" 2>/dev/null || break
  sleep 0.1
done
[ "$(grep -c 'up and allreducing' "$log")" = 4 ] || { cat "$log"; echo "FAIL: the ranks never all started"; exit 1; }
sleep 0.5
cut=$(date +%s%N)
if [ "$split" = 3-1 ]; then
  ip -n tsr3 link set net0 down
else
  ip -n tsrsw link add br1 type bridge stp_state 0 forward_delay 0
  ip -n tsrsw link set br1 up
  ip -n tsrsw link set p2 master br1
  ip -n tsrsw link set p3 master br1
fi
wait "$child"
status=$?
child=
took_ms=$((($(date +%s%N) - cut) / 1000000))
grep -v '^\[[0-9]\] \[' "$log"  # the ranks' reports and tsrun's, without the runtime's log lines
echo "job ended ${took_ms} ms after the partition, status $status"

fail=0
if [ "$split" = 3-1 ]; then
  for r in 0 1 2; do
    grep -E "^\[$r\] rank $r: SHRUNK to rank $r of 3 .*allreduce exact" "$log" >/dev/null ||
      { echo "FAIL: rank $r did not shrink to rank $r of 3"; fail=1; }
  done
  stopped="3"
else
  stopped="0 1 2 3"
fi
for r in $stopped; do
  grep -E "^\[$r\] rank $r: FAILED to shrink: .*of 4, not a majority" "$log" >/dev/null ||
    { echo "FAIL: rank $r did not stop with 'not a majority'"; fail=1; }
done
! grep -E "SHRUNK to rank [0-9]+ of [12] " "$log" >/dev/null || { echo "FAIL: a minority went on"; fail=1; }
[ "$status" != 0 ] || { echo "FAIL: tsrun exited 0 though ranks were lost"; fail=1; }
exit $fail
