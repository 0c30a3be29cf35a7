#!/usr/bin/env bash
# The short soak under tsrun, 4 ranks. Usage: soak_check.sh TSRUN TSR_SOAK [pass|wrong]
#   pass:  600 mixed collectives up to 1 MiB (every result checked) and 30 communicator
#          create/destroy cycles; exit 0, every rank's OK line, rank 0's JSON line with
#          "ok":true (parsed by python3: each key once, the run's figures) and its PASSED
#          line, no FAILED line.
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
# The line is JSON with each key once in every object (the option "cycles" and the phase's
# "cycles" object were one key twice).
sed -n 's/^\[0\] \({"tool":"tsr-soak".*\)$/\1/p' <<<"$out" | python3 -c '
import json, sys
def once(pairs):
    keys = [k for k, _ in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup: sys.exit("soak_check.sh: a key twice in the JSON line: " + ", ".join(dup))
    return dict(pairs)
j = json.loads(sys.stdin.read(), object_pairs_hook=once)
assert j["ops"] == 600 and j["cycles_asked"] == 30 and j["seed"] == 11, j
assert j["mixed"]["ops_done"] == 600 and j["cycles"]["done"] == 30, j
assert [r["rank"] for r in j["per_rank"]] == [0, 1, 2, 3] and j["ok"] is True, j
' || fail "rank 0's JSON line is not JSON with each key once and the run's figures"
grep -qE '^\[0\] tsr-soak: PASSED$' <<<"$out" || fail "no PASSED line"
! grep -q 'FAILED' <<<"$out" || fail "a FAILED line"
echo "soak_check.sh: ok"
