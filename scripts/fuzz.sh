#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [TARGET...]: builds the libFuzzer targets (fuzz/, build-fuzz/, clang++
# with ASan + UBSan) and runs each for SECONDS (default 20) on its seeds; fails when any target
# finds a crash, a leak, undefined behaviour or a timeout. TARGET: fuzz_hostfile, ... (default all).
#   scripts/fuzz.sh --seeds   rewrites the binary seeds of fuzz/corpus/ from the real encoders.
#   scripts/fuzz.sh --build   only builds the targets.
# New inputs go to build-fuzz/corpus/<target>/ (kept between runs), findings to
# build-fuzz/artifacts/<target>/. TSR_FUZZ_JOBS: build parallelism (default: all cores).
# docs/fuzzing.md has the targets and how to run a longer campaign.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz
jobs=${TSR_FUZZ_JOBS:-$(nproc)}

if ! command -v clang++ >/dev/null; then
  echo "tessera: WARNING: no clang++: the fuzz targets are not built or run (apt-get install clang)"
  exit 0
fi
if [ ! -f "$build/build.ninja" ]; then
  mkdir -p "$build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DTSR_FUZZ=ON -DTSR_WITH_CUDA=OFF >"$build/configure.log" 2>&1 || {
    cat "$build/configure.log"; echo "tessera: configure failed ($build)"; exit 1; }
fi
cmake --build "$build" --target fuzzers -j"$jobs"

if [ "${1:-}" = "--build" ]; then
  exit 0
fi
if [ "${1:-}" = "--seeds" ]; then
  "$build/bin/make_seeds" "$root/fuzz/corpus"
  echo "tessera: seeds written to fuzz/corpus/"
  exit 0
fi

seconds=${1:-20}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=($(cd "$build/bin" && ls fuzz_* | sort))
fi

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=()
summary=""
for t in "${targets[@]}"; do
  name=${t#fuzz_}
  corpus=$build/corpus/$name
  artifacts=$build/artifacts/$name
  mkdir -p "$corpus" "$artifacts" "$root/fuzz/corpus/$name"
  log=$build/fuzz-$name.log
  echo "== $t (${seconds}s)"
  # The repository's seeds are read, never written: what the run finds goes to $corpus.
  # -timeout is wall-clock: generous, so that a loaded machine does not report a hang. The
  # seed is fixed (TSR_FUZZ_SEED, 0: random) so that a short run tries the same inputs each time.
  if "$build/bin/$t" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=2048 -print_final_stats=1 \
       -seed="${TSR_FUZZ_SEED:-1}" \
       -artifact_prefix="$artifacts/" "$corpus" "$root/fuzz/corpus/$name" >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
    failed+=("$t")
    grep -E "ERROR|runtime error|SUMMARY|Test unit written" "$log" | head -20 || true
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  summary+=$(printf '%-26s %12s executions  %s' "$t" "${execs:-?}" "$status")$'\n'
done
echo "== Fuzz summary (${seconds}s per target)"
printf '%s' "$summary"
if [ ${#failed[@]} -gt 0 ]; then
  echo "tessera: fuzzing found problems in: ${failed[*]} (inputs in $build/artifacts/, logs in $build/fuzz-*.log)"
  exit 1
fi
