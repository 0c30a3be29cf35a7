#!/usr/bin/env bash
# The short soak under tsrun, 4 ranks. Usage: soak_check.sh TSRUN TSR_SOAK [pass|wrong]
#   pass:  600 mixed collectives up to 1 MiB (every result checked) and 30 communicator
#          create/destroy cycles; exit 0, every rank's OK line, rank 0's JSON line with
#          "ok":true and its PASSED line, no FAILED line.
#   wrong: the same with rank 2 altering one element of a result (the --plant-wrong hook);
#          a non-zero exit, rank 2 naming the operation, element, expected and got values,
#          and every other rank stopping with a FAILED line instead of waiting.
set -uo pipefail
tsrun=$1 soak=$2 mode=${3:-pass}
fail() { echo "soak_check.sh: $*" >&2; exit 1; }
args=(--ops 600 --max-bytes 1M --cycles 30 --seed 11)
[ "$mode" = wrong ] && args+=(--plant-wrong 2:100)
out=$("$tsrun" -np 4 "$soak" "${args[@]}" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$mode" = wrong ]; then
  [ "$rc" -ne 0 ] || fail "tsrun exited with status 0 after a wrong result"
  grep -qE '^\[2\] tsr-soak: FAILED: WRONG RESULT: rank 2, op [0-9]+: .*, setup [a-z-]+ \(TSR_ALGO=[a-z]+\), algorithm [a-z -]+, element [0-9]+: expected -?[0-9.e+-]+, got ' <<<"$out" ||
    fail "no WRONG RESULT line from rank 2 naming the operation, setup, algorithm, element and values"
  for r in 0 1 3; do
    grep -qE "^\[$r\] tsr-soak: FAILED: rank $r, op [0-9]+: .*rank 2" <<<"$out" || fail "rank $r did not stop naming rank 2"
  done
  ! grep -q 'PASSED' <<<"$out" || fail "a PASSED line after a wrong result"
  echo "soak_check.sh: ok (wrong result named, every rank stopped)"
  exit 0
fi
[ "$rc" -eq 0 ] || fail "tsrun exited with status $rc (expected 0)"
for r in 0 1 2 3; do
  grep -qE "^\[$r\] rank $r: mixed: 600 ops, .*; cycles: 30, .*; OK$" <<<"$out" || fail "no OK summary line from rank $r"
done
grep -qE '^\[0\] \{"tool":"tsr-soak","ranks":4,.*"ok":true\}$' <<<"$out" || fail "no JSON line with \"ok\":true from rank 0"
grep -qE '^\[0\] tsr-soak: PASSED$' <<<"$out" || fail "no PASSED line"
! grep -q 'FAILED' <<<"$out" || fail "a FAILED line"
echo "soak_check.sh: ok"
