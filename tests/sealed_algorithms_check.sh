#!/usr/bin/env bash
# Every algorithm with TSR_SECURE=encrypt, checked by tsr-bench (-c 1) under the real tsrun: 4
# ranks on one machine acting as separate hosts (TSR_TEST_HOST_ID), so every link is sealed,
# then as 2 hosts of 2 ranks for the algorithms that need a grid. Every rank must say its data
# plane is sealed, and every row must check clean.
# Then the short soak (tools/soak: every collective, dtype and op, checked exactly; its ring-hosts,
# torus and hier communicators act as several hosts, so their links are sealed).
#   sealed_algorithms_check.sh TSRUN TSR_BENCH TSR_SOAK
set -uo pipefail
tsrun=$1 bench=$2 soak=$3
fail=0
run() {  # HOSTS_DIVISOR ALGO...
  local div=$1; shift
  for algo in "$@"; do
    out=$("$tsrun" -np 4 -x TSR_SECURE=encrypt -x TSR_LOG_LEVEL=info -x TSR_TIMEOUT_MS=60000 \
      sh -c "TSR_TEST_HOST_ID=h\$((TSR_RANK / $div)) exec \"\$0\" \"\$@\"" \
      "$bench" --algo "$algo" -b 64K -e 1M -f 4 -n 3 -w 1 -c 1 2>&1)
    status=$?
    sealed=$(grep -c "data plane sealed with AES-256-GCM" <<<"$out")
    if [ "$status" != 0 ] || ! grep -q '# Out of bounds values : 0 OK' <<<"$out" || [ "$sealed" -lt 4 ]; then
      grep -v "\[info\]" <<<"$out" | tail -20
      echo "FAIL: --algo $algo (hosts of $div ranks): exit $status, $sealed ranks sealed"
      fail=1
    else
      echo "ok: --algo $algo (hosts of $div ranks), sealed on every rank"
    fi
  done
}
run 1 auto ring rabenseifner doubling marsit spardl topk
run 2 torus hier marsit-torus marsit-2level topk-2level
out=$("$tsrun" -np 4 -x TSR_SECURE=encrypt "$soak" --ops 600 --max-bytes 1M --cycles 10 --seed 5 2>&1)
if [ $? != 0 ] || ! grep -q "^\[0\] tsr-soak: PASSED" <<<"$out"; then
  tail -20 <<<"$out"; echo "FAIL: the soak with TSR_SECURE=encrypt"; fail=1
else
  echo "ok: the soak with TSR_SECURE=encrypt"
fi
exit $fail
