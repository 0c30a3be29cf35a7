#!/usr/bin/env bash
# tsr-sim's command line: what it refuses (exit 2, naming the option and the value) and what it
# takes. usage: check_sim_cli.sh TSR_SIM CASE
set -u
bin=$1 case=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failures=0

# expect STATUS PATTERN ARGS...: tsr-sim must exit with STATUS and print a line matching the
# extended regex.
expect() {
  local status=$1 want=$2 got=0
  shift 2
  "$bin" "$@" >"$out" 2>&1 || got=$?
  if [ "$got" -ne "$status" ]; then
    echo "FAIL [$case]: tsr-sim $* exited with $got, not $status"; cat "$out"; failures=$((failures + 1))
  elif ! grep -Eq -- "$want" "$out"; then
    echo "FAIL [$case]: tsr-sim $*: no line matches: $want"; cat "$out"; failures=$((failures + 1))
  fi
}
refused() { expect 2 "$@"; }  # a usage error, naming the option and the value
taken() { expect 0 "$@"; }

case $case in
  algo)
    refused '^tsr-sim: --algo rign: accepted values for --collective allreduce are auto\|ring\|' \
      --ranks 4 --algo rign --size 1MiB
    for algo in torus rabenseifner marsit; do
      refused "^tsr-sim: --algo $algo: accepted values for --collective allgather are auto\|ring\|bruck$" \
        --ranks 4 --collective allgather --algo $algo --size 1MiB --plan-only
    done
    refused '^tsr-sim: --collective alltoall: accepted values are allreduce\|allgather$' --collective alltoall
    taken '^plan allgather bruck: 4 ranks' --ranks 4 --collective allgather --algo bruck --size 1MiB --plan-only
    ;;
  arrival)
    refused '^tsr-sim: --arrival yes: accepted values are auto\|on\|off$' --ranks 4 --arrival yes --plan-only
    taken '^plan allreduce ring: 4 ranks' --ranks 4 --algo ring --arrival on --size 1MiB --plan-only
    ;;
  chunk)
    refused '^tsr-sim: --chunk 0 B: accepted values are 1024\.\.1073741824 B \(TSR_CHUNK_BYTES\)$' --chunk 0 --plan-only
    refused '^tsr-sim: --chunk 100 B: ' --ranks 4 --chunk 100 --size 1MiB
    refused '^tsr-sim: --min-message 0 B: accepted values are 1\.\.1073741824 B' --min-message 0 --plan-only
    taken '^plan allreduce ring: 4 ranks' --ranks 4 --algo ring --chunk 1024 --min-message 1 --size 1MiB --plan-only
    ;;
  dtype)
    refused '^tsr-sim: --algo marsit takes --dtype f32 only, not --dtype f64$' --ranks 4 --algo marsit --dtype f64 --plan-only
    refused '^tsr-sim: --algo spardl takes --dtype f32 only, not --dtype f16$' --ranks 4 --algo spardl --dtype f16 --plan-only
    refused '^tsr-sim: --dtype f8: accepted values are f32\|' --dtype f8
    refused '^tsr-sim: --op xor: accepted values are sum\|' --op xor
    taken '^plan allreduce marsit: 4 ranks' --ranks 4 --algo marsit --size 1MiB --plan-only
    ;;
  sizes)
    # Sizes read as tsr-bench reads them: 4K and 4KiB are 4096 B, 4KB 4000 B (ring on 2 ranks: 2x).
    taken '^plan allreduce ring: 2 ranks .* 8192 B payload' --ranks 2 --algo ring --size 4K --plan-only
    taken '^plan allreduce ring: 2 ranks .* 8192 B payload' --ranks 2 --algo ring --size 4k --plan-only
    taken '^plan allreduce ring: 2 ranks .* 8192 B payload' --ranks 2 --algo ring --size 4KiB --plan-only
    taken '^plan allreduce ring: 2 ranks .* 8000 B payload' --ranks 2 --algo ring --size 4KB --plan-only
    refused '^tsr-sim: --size 12furlongs: not a size \(' --size 12furlongs
    refused '^tsr-sim: --chunk -1: not a size \(' --chunk -1
    refused '^tsr-sim: --bw: rate .fast.: no number' --bw fast
    ;;
  *)
    echo "unknown case $case"; exit 2 ;;
esac
if [ "$failures" -ne 0 ]; then exit 1; fi
echo "ok [$case]"
