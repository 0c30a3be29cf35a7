#!/usr/bin/env bash
# Runs tsr-info on one case and checks its output against the settings table in the sources.
# usage: check_info.sh TSR_INFO SOURCE_DIR CUDA(ON|OFF) WORK_DIR CASE
set -u
bin=$1 src=$2 cuda=$3 work=$4/$5 case=$5
mkdir -p "$work"
out="$work/$case.out"
failures=0

fail() { echo "FAIL [$case]: $*"; failures=$((failures + 1)); }
# expect PATTERN: the last output must contain a line matching the extended regex.
expect() { grep -Eq -- "$1" "$out" || fail "no line matches: $1"; }
refute() { ! grep -Eq -- "$1" "$out" || fail "a line matches: $1"; }
# run [VAR=value...] -- ARGS...: runs tsr-info with those variables; a non-zero exit fails the case.
run() {
  local vars=()
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  if ! env "${vars[@]}" "$bin" "$@" >"$out" 2>&1; then
    echo "FAIL [$case]: tsr-info $* exited with $?"; cat "$out"; exit 1
  fi
}
# run_fails [VAR=value...] -- ARGS...: tsr-info must exit non-zero; $status is its exit status.
run_fails() {
  local vars=()
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  env "${vars[@]}" "$bin" "$@" >"$out" 2>&1
  status=$?
  [ "$status" -ne 0 ] || fail "tsr-info $* succeeded but should fail"
}

# The table as written in runtime/config.cc: every entry starts a line with {"TSR_NAME".
table=$(grep -oE '^ *\{"TSR_[A-Z0-9_]+"' "$src/runtime/config.cc" | grep -oE 'TSR_[A-Z0-9_]+' | sort)
[ "$(echo "$table" | wc -l)" -ge 20 ] || { echo "FAIL [$case]: cannot read the table from runtime/config.cc"; exit 1; }
# printed_names: the settings tsr-info printed (NAME=... at the start of a line).
printed_names() { grep -oE '^TSR_[A-Z0-9_]+=' "$out" | tr -d = | sort; }

case $case in
  all)
    run --
    expect '^Tessera [0-9]+\.[0-9]+\.[0-9]+$'
    expect '^  UCX: +[0-9]+\.[0-9]+'
    expect '^  UCX transports: +[a-z]'
    expect '^  UCX memory types: +host'
    expect '^  hwloc: +[0-9]+\.[0-9]+'
    expect '^Settings '
    [ "$(printed_names)" = "$table" ] || fail "the settings printed differ from the table"
    run -- --all
    expect '^Build:$'
    expect '^Settings '
    expect '^Tensor algorithms '
    ;;
  algorithms)
    # Both tables, every name once; a preset says what it runs.
    run -- -l
    refute '^TSR_[A-Z_]+='
    refute '^Build:'
    for name in ring torus hier rabenseifner doubling bruck shm; do expect "^  $name +all(reduce|gather)"; done
    for name in dense marsit compressed spardl marsit-torus marsit-2level topk topk-2level-fp16 onebit; do
      [ "$(grep -cE "^  $name " "$out")" -eq 1 ] || fail "tensor algorithm $name is not listed exactly once"
    done
    expect '^      = algorithm=compressed compressor=topk, default k=0\.01$'
    expect '^      keys: topology=ring\|torus '
    run_fails -- -l -s
    expect '^tsr-info: error: --settings excludes --algorithms'
    ;;
  settings)
    # Every entry exactly once; a value the environment sets is the current one.
    run TSR_WINDOW=8 TSR_LOG_FILE=/tmp/x-%r.log -- -s
    diff <(printed_names) <(echo "$table") >/dev/null || { fail "the settings printed differ from the table:"; diff <(printed_names) <(echo "$table"); }
    [ "$(grep -cE '^TSR_' "$out")" -eq "$(echo "$table" | wc -l)" ] || fail "the number of NAME= lines differs from the table's"
    expect '^TSR_WINDOW=8  \(environment; default 4; an integer in 1\.\.64\)$'
    expect '^TSR_LOG_FILE=/tmp/x-%r\.log  \(environment; default none'
    expect '^TSR_TIMEOUT_MS=300000  \(default; an integer in '
    expect '^TSR_BIND=numa  \(default; one of none\|numa\|core\)$'
    expect '^    a pending collective fails with TSR_ERR_TIMEOUT after this long$'
    refute '^Build:'
    refute '^  UCX'
    run TSR_WINDOW=16 -- --settings
    expect '^TSR_WINDOW=16  \(environment'
    ;;
  build)
    run -- -b
    refute '^TSR_[A-Z_]+='
    refute '^Settings'
    if [ "$cuda" = ON ]; then expect '^  CUDA: +on'; else expect '^  CUDA: +off$'; fi
    expect '^  CPU kernels: '
    expect '^  CUDA memory: +(yes|no)'
    run UCX_TLS=tcp,self -- --build
    expect '^  UCX_TLS: +tcp,self$'
    ;;
  invalid)
    # A value the runtime refuses is named, and the exit status says so.
    run_fails TSR_WINDOW=0 TSR_TIMEOUT_SM=5 -- -s
    expect '^TSR_WINDOW=0  \(INVALID, the runtime refuses it: .*1\.\.64'
    expect '^  TSR_TIMEOUT_SM \(did you mean TSR_TIMEOUT_MS\?\)$'
    expect 'tsr-info: error: the environment sets 1 value the runtime refuses'
    [ "$status" -eq 1 ] || fail "exit status $status for a refused value, not 1"
    # The job secret is never printed.
    run TSR_JOB_SECRET=do-not-print-this-secret-0123456789 -- -s
    refute 'do-not-print-this-secret'
    expect '^TSR_JOB_SECRET=<set, not shown>  \(environment'
    ;;
  options)
    # A command-line error names what was wrong and exits 2.
    run_fails -- --bogus-option
    expect -- "^tsr-info: error: .*--bogus-option"
    [ "$status" -eq 2 ] || fail "exit status $status for an unknown option, not 2"
    run_fails -- -x
    expect -- "^tsr-info: error: .*-x"
    run_fails -- -s -b
    expect '^tsr-info: error: --settings excludes --build'
    run_fails -- -s extra
    expect 'extra'
    run -- --help
    expect -- '-s,--settings'
    # --version: the CMake project's version, the one the library and packages carry.
    version=$(grep -oE 'project\(tessera VERSION [0-9]+\.[0-9]+\.[0-9]+' "$src/CMakeLists.txt" | grep -oE '[0-9.]+$')
    run -- --version
    expect "^tsr-info \(Tessera\) ${version//./\\.}$"
    [ "$(wc -l <"$out")" -eq 1 ] || fail "--version printed more than its line"
    run -- -V
    expect '^tsr-info \(Tessera\) [0-9]'
    ;;
  names)
    # Every TSR_ name the sources read (a quoted literal, or one before '=') is in the table.
    # Not scanned: tests, shell scripts (their own parameters), the C API's constants and the
    # status codes' names (base/status.cc).
    capi=$(grep -ohE '^ *TSR_[A-Z0-9_]+ =|^#define TSR_[A-Z0-9_]+' "$src"/bindings/c/include/tessera/*.h |
           grep -oE 'TSR_[A-Z0-9_]+' | sort -u)
    read_names=$(cd "$src" && grep -rHoE "[\"']TSR_[A-Z0-9_]+[\"'=]" \
                   --include='*.cc' --include='*.h' --include='*.cu' --include='*.c' --include='*.py' \
                   --exclude-dir=tests --exclude-dir=build base transport topology algorithms runtime bindings tools |
                 grep -v '^base/status\.cc:' | grep -oE 'TSR_[A-Z0-9_]+' | sort -u)
    [ -n "$read_names" ] || fail "found no TSR_ names in the sources"
    echo "$read_names" | grep -qx TSR_TIMEOUT_MS || fail "the scan misses TSR_TIMEOUT_MS: it reads nothing"
    for name in $read_names; do
      if echo "$capi" | grep -qx "$name"; then continue; fi
      if [[ $name == *_ ]]; then  # a prefix (TSR_COMPRESS_): some entry must start with it
        echo "$table" | grep -q "^$name" || fail "no setting starts with $name"
      else
        echo "$table" | grep -qx "$name" || fail "$name is read in the sources but is not in the settings table (runtime/config.cc)"
      fi
    done
    : >"$out"
    ;;
  *)
    echo "unknown case $case"; exit 2 ;;
esac
if [ "$failures" -ne 0 ]; then
  echo "---- output of the last run ----"; cat "$out"; exit 1
fi
echo "ok [$case]"
