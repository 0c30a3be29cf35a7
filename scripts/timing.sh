# Sourced by test.sh: a timing report of the run, printed on exit (also when a phase fails).
#   tsr_phase NAME       starts phase NAME (ending the one before) and prints "== NAME"
#   tsr_ctest NAME ARGS  runs `ctest ARGS` as phase NAME, keeping its per-test timings
# The report lists each phase's seconds, then the slowest tests of each ctest phase, as ctest
# timed them (wall time of each test; with -j they overlap).

TSR_TIMING_DIR=$(mktemp -d)
TSR_PHASE_NAMES=()
TSR_PHASE_SECONDS=()
TSR_PHASE_CURRENT=""
TSR_PHASE_START=0
TSR_RUN_START=$SECONDS
TSR_SLOWEST=${TSR_SLOWEST:-15}

tsr_phase_end() {
  if [ -n "$TSR_PHASE_CURRENT" ]; then
    TSR_PHASE_NAMES+=("$TSR_PHASE_CURRENT")
    TSR_PHASE_SECONDS+=("$((SECONDS - TSR_PHASE_START))")
  fi
  TSR_PHASE_CURRENT=""
}

tsr_phase() {
  tsr_phase_end
  TSR_PHASE_CURRENT=$1
  TSR_PHASE_START=$SECONDS
  echo "== $1"
}

tsr_ctest() {
  local name=$1; shift
  tsr_phase "$name"
  local log="$TSR_TIMING_DIR/ctest-${#TSR_PHASE_NAMES[@]}.log"
  echo "$name" >"$log.title"
  ctest "$@" | tee "$log"
}

tsr_timing_report() {
  local status=$?
  # The report must not change the run's outcome (head closing a pipe is not a failure).
  set +e +o pipefail
  [ "$status" = 0 ] || [ -z "$TSR_PHASE_CURRENT" ] || TSR_PHASE_CURRENT+=" (failed)"
  tsr_phase_end
  echo
  echo "== Timing (seconds of wall time)"
  local i
  for i in "${!TSR_PHASE_NAMES[@]}"; do
    printf '  %-40s %6s\n' "${TSR_PHASE_NAMES[$i]}" "${TSR_PHASE_SECONDS[$i]}"
  done
  printf '  %-40s %6s\n' "total" "$((SECONDS - TSR_RUN_START))"
  local log
  for log in "$TSR_TIMING_DIR"/ctest-*.log; do
    [ -f "$log" ] || continue
    echo "== The $TSR_SLOWEST slowest tests of \"$(cat "$log.title")\" (seconds)"
    # ctest's lines: "  12/301 Test  #12: Name ......   Passed    1.23 sec".
    awk '/Test +#[0-9]+: / {
           for (i = 1; i <= NF; i++) if ($i ~ /^#[0-9]+:$/) name = $(i + 1)
           for (i = NF; i > 1; i--) if ($i == "sec") { t = $(i - 1); break }
           status = ($0 ~ /Passed/) ? "" : (($0 ~ /Skipped|Not Run/) ? "skipped" : "FAILED")
           printf "%9.2f  %s %s\n", t, name, status
         }' "$log" | sort -rn | head -n "$TSR_SLOWEST"
    awk '/Test +#[0-9]+: / { n++; for (i = NF; i > 1; i--) if ($i == "sec") { s += $(i - 1); break } }
         END { if (n) printf "  %d tests, %.0f test-seconds in all\n", n, s }' "$log"
  done
  rm -rf "$TSR_TIMING_DIR"
  exit "$status"
}
trap tsr_timing_report EXIT
