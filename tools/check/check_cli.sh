#!/usr/bin/env bash
# tsr-check's command line and reports. Usage: check_cli.sh TSRUN TSR_CHECK CASE
#   help:  --help lists exactly the cases it runs (and says what it does not), exit 0; any
#          other argument is a usage error (exit 2).
#   wrong: rank 2 alters every element of the first allreduce (--plant-wrong, a test hook):
#          rank 0's row counts all 1048579 of them (the count wrapped at 1,000,000), rank 2
#          prints its own line, exit 1.
#   error: rank 1's barrier row fails (--plant-error): rank 1 prints its own line with the
#          error, rank 0's row has no count and names rank 1, exit 1.
set -uo pipefail
tsrun=$1 check=$2 case=$3
fail() { echo "check_cli.sh [$case]: $*" >&2; exit 1; }
case $case in
  help)
    out=$("$check" --help 2>&1) || fail "--help exited with $?"
    printf '%s\n' "$out"
    for line in 'allreduce f32 sum, 1048579 elements' 'allreduce i32 min, 1 element' \
      'allreduce i64 prod, 4099 elements' 'allgather f32, 250000 elements per rank' \
      'reduce_scatter f32 sum, 250000 elements per rank' 'broadcast i64 from the last rank, 500000 elements' \
      'barrier'; do
      grep -qxF "  $line" <<<"$out" || fail "no case line '  $line'"
    done
    [ "$(grep -c '^  ' <<<"$out")" -eq 10 ] || fail "not 10 case lines"
    grep -q 'Nothing else is run: not all-to-all, send/recv or the tensor algorithms' <<<"$out" || fail "no 'Nothing else'"
    ! grep -qi 'every collective\|every dtype' <<<"$out" || fail "it claims every collective or dtype"
    out=$("$check" --bogus 2>&1)
    rc=$?
    [ "$rc" -eq 2 ] || fail "--bogus exited with $rc, not 2"
    grep -q "^tsr-check: unknown argument '--bogus'$" <<<"$out" || fail "--bogus not named"
    ;;
  wrong)
    out=$("$tsrun" -np 3 "$check" --plant-wrong 2 2>&1)
    rc=$?
    printf '%s\n' "$out"
    [ "$rc" -ne 0 ] || fail "exit 0 with wrong values"
    grep -qE '^\[0\] allreduce +f32 +sum +[a-z-]+ +1048579 +[0-9.]+ +1048579  WRONG$' <<<"$out" ||
      fail "rank 0's row does not count 1048579 wrong"
    grep -qx '\[2\] tsr-check: rank 2: allreduce f32 sum: 1048579 wrong elements of 1048579' <<<"$out" ||
      fail "no line of rank 2's own"
    ! grep -qE '^\[[01]\] tsr-check: rank' <<<"$out" || fail "a line from a rank that saw nothing wrong"
    grep -qx '\[0\] FAILED: 10 cases, 1 failed' <<<"$out" || fail "no FAILED line"
    ;;
  error)
    out=$("$tsrun" -np 3 "$check" --plant-error 1 2>&1)
    rc=$?
    printf '%s\n' "$out"
    [ "$rc" -ne 0 ] || fail "exit 0 with a failed case"
    grep -qx '\[1\] tsr-check: rank 1: barrier: TSR_ERR_INTERNAL: planted (--plant-error)' <<<"$out" ||
      fail "rank 1 did not print its own error"
    grep -qE "^\[0\] barrier .* 0 +[0-9.]+ +-  ERROR on 1 rank \(rank 1's own line says why\)$" <<<"$out" ||
      fail "rank 0's row claims a count or does not name rank 1"
    grep -qx '\[0\] FAILED: 10 cases, 1 failed' <<<"$out" || fail "no FAILED line"
    ;;
  *) fail "unknown case" ;;
esac
echo "check_cli.sh [$case]: ok"
