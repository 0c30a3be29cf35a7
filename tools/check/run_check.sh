#!/usr/bin/env bash
# The main job of ./run.sh as a test: tsrun -np 4 --hostfile tools/hostfiles/local4 tsr-check,
# which must exit 0, print its table for 4 ranks and end with rank 0's PASSED line.
# Usage: run_check.sh TSRUN HOSTFILE TSR_CHECK
set -uo pipefail
tsrun=$1 hostfile=$2 check=$3
out=$("$tsrun" -np 4 --hostfile "$hostfile" "$check" 2>&1)
rc=$?
printf '%s\n' "$out"
fail() { echo "run_check.sh: $*" >&2; exit 1; }
[ "$rc" -eq 0 ] || fail "tsrun exited with status $rc (expected 0)"
grep -q '^\[0\] tessera check: 4 ranks,' <<<"$out" || fail "no '[0] tessera check: 4 ranks' header"
rows=$(grep -cE '^\[0\] (allreduce|allgather|reduce_scatter|broadcast|barrier) .* OK$' <<<"$out")
[ "$rows" -eq 10 ] || fail "expected 10 OK rows from rank 0, found $rows"
grep -qE '^\[0\] PASSED: 10 cases, 0 failed$' <<<"$out" || fail "no '[0] PASSED: 10 cases, 0 failed' line"
! grep -qE 'FAILED|WRONG' <<<"$out" || fail "a FAILED or WRONG line"
echo "run_check.sh: ok"
