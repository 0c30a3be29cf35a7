#!/usr/bin/env bash
# CI check on the emulated cluster: a short tsr-bench correctness pass (-c 1, a few sizes) on
# N hosts at RATE through tools/bench/cluster.sh, which tears the cluster down; so does this
# script's own trap, on any exit or signal.
#   cluster_check.sh N RATE BUILD_DIR [RANKS_PER_HOST [ALGOS]]
# ALGOS: space-separated --algo values (default auto), all run on the same cluster;
# each must check clean.
# Skipped (exit 77) where network namespaces cannot be made (not root, no ip netns).
set -uo pipefail
n=$1 rate=$2 build=$3 per=${4:-1} algos=${5:-auto}
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
  echo "skipped: needs root and ip netns"; exit 77
fi
# cluster.sh tears the cluster down itself, but not when it is killed outright or when this
# script is stopped while it waits (CTest's timeout, Ctrl-C): our own trap then stops
# cluster.sh's whole session (timeout, tsrun, the ranks) and takes the cluster down, on any
# exit or signal.
root=$(cd "$here/../../.." && pwd)
net=${TSR_SHARED:-$root/../shared}/tools/netcluster.sh
log=$(mktemp /tmp/tsr-cluster-check.XXXXXX)
child=
teardown() {
  if [ -n "$child" ]; then
    # The session, not just the process group: timeout(1) puts tsrun in a group of its own.
    pkill -TERM -s "$child" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do pgrep -s "$child" >/dev/null || break; sleep 0.5; done
    pkill -KILL -s "$child" 2>/dev/null
    wait "$child" 2>/dev/null
  fi
  [ ! -x "$net" ] || "$net" down >/dev/null 2>&1 || true
  rm -f "$log"
}
trap teardown EXIT
trap 'echo "cluster_check.sh: interrupted"; exit 130' INT
trap 'echo "cluster_check.sh: terminated"; exit 143' TERM HUP
# In the background, in a session of its own (setsid), so that the traps run at once (bash
# defers them while a foreground child runs) and the session can be stopped as one.
RANKS_PER_HOST=$per SIZES_MIB=1,4 PEERS=0 TCP_STATS=1 HOST_SYSCTL=net.ipv4.tcp_congestion_control=reno TSR_BUILD=$build BENCH_TIMEOUT_S=120 ALGOS=$algos \
  setsid "$here/../cluster.sh" "$n" "$rate" -c 1 -d f32 >"$log" 2>&1 &
child=$!
wait "$child"
status=$?
child=
out=$(cat "$log")
echo "$out"
leftover=$(ip netns list | grep -E '^tsr' || true)
[ -z "$leftover" ] || { echo "FAIL: namespaces left behind: $leftover"; exit 1; }
[ $status = 0 ] || { echo "FAIL: cluster.sh exited $status"; exit 1; }
want=$(echo $algos | wc -w)
clean=$(echo "$out" | grep -c "Out of bounds values : 0 OK")
[ "$clean" = "$want" ] || { echo "FAIL: $clean clean results for $want algorithms ($algos)"; exit 1; }
echo "$out" | grep -q "hosts tsr0..tsr$((n - 1))" || { echo "FAIL: ranks did not run on tsr0..tsr$((n - 1))"; exit 1; }
# HOST_SYSCTL: set on every host and read back there (reno: built into every kernel).
echo "$out" | grep -qx "## host setting, read back on tsr0..tsr$((n - 1)): net.ipv4.tcp_congestion_control=reno" ||
  { echo "FAIL: no read-back line for HOST_SYSCTL"; exit 1; }
# TCP_STATS=1: one line of counters per run, each field a number, and segments sent in each.
stats=$(echo "$out" | grep -E '^## tcp counters, all hosts, that run: OutSegs=[1-9][0-9]* RetransSegs=[0-9]+ TCPSACKReorder=[0-9]+ TCPDSACKRecv=[0-9]+ TCPOFOQueue=[0-9]+ TCPTimeouts=[0-9]+$' | wc -l)
[ "$stats" = "$want" ] || { echo "FAIL: $stats tcp counter lines for $want runs"; exit 1; }
# With no rate given, the probe measures the slow network and every run moves to a transport
# whose TCP send buffer suits it (runtime/communicator_links.cc); tsr-bench names it. Hosts of
# several ranks talk TCP over loopback too here (UCX_TLS=tcp,self): at least 64 KiB then.
if [ "$rate" = 1gbit ]; then
  sizes='(16|32|64) KiB' floor=''
  [ "$per" -gt 1 ] && sizes='64 KiB' floor=", at least loopback TCP's need \\(same-host peers\\)"
  sized=$(echo "$out" | grep -cE "# tcp send buffer \\(UCX, rank 0\\): $sizes, sized to the probed net link, [0-9]+\\.[0-9] MB/s$floor\$")
  [ "$sized" = "$want" ] || { echo "FAIL: $sized runs with a send buffer sized to the probed 1 Gbit/s link, for $want runs"; exit 1; }
fi
