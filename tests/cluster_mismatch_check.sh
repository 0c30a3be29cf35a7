#!/usr/bin/env bash
# Mismatched calls on the emulated cluster, one rank per host: each CASE of fault_worker's
# "repeat" mode (tests/proc/fault_worker.cc) runs REPS fresh communicators in a row, and every
# repetition must end as it must on every rank (the mismatch named everywhere, a correct
# collective before it completed, a communicator destroyed at once without harm), with nothing
# from UCX (no assertion, no failed shmat) in the output.
#   cluster_mismatch_check.sh BUILD_DIR HOSTS REPS CASE...
# Skipped (exit 77) where network namespaces cannot be made (not root, no ip netns).
set -uo pipefail
build=$1 hosts=$2 reps=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cluster_common.sh"
cluster_up mismatch "$hosts" 1gbit
fail=0
for what in "$@"; do
  # TCP between hosts: UCX's shared memory would bypass the emulated links.
  setsid timeout 240 "$build/bin/tsrun" --hostfile "$hostfile" --rsh "$net rsh" --grace 9 \
    -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=net0 -x TSR_TIMEOUT_MS=20000 \
    "$build/bin/fault_worker" repeat "$what" "$reps" >"$log" 2>&1 &
  child=$!
  wait "$child"
  status=$?
  child=
  ok=$(grep -cE "^\[[0-9]+\] rank [0-9]+: OK $reps reps of $what$" "$log")
  if [ "$status" != 0 ] || [ "$ok" != "$hosts" ]; then
    cat "$log"
    echo "FAIL: $what: status $status, $ok of $hosts ranks went through $reps repetitions"
    fail=1
  fi
  if grep -E "Assertion|shmat|Segmentation" "$log"; then
    echo "FAIL: $what: UCX complained (above)"
    fail=1
  fi
  [ $fail = 1 ] || echo "ok: $what, $reps repetitions on $hosts hosts"
done
exit $fail
