#!/usr/bin/env bash
# ./test.sh [--full]: install what is missing, build, run the tests (ctest), then the unit and
# multi-rank tests again under AddressSanitizer + UndefinedBehaviorSanitizer, then every fuzz
# target briefly; a timing report ends the run.
#   ./test.sh          the default tier (what CI runs): every kind of test, sweeps at their
#                      edges, the long fault and chaos scenarios left out (ctest label "full")
#   ./test.sh --full   everything, the fuzz targets for longer: before a release, or after a
#                      change to what a long check guards (docs/install.md, "Tests")
set -euo pipefail
tier=default
case "${1:-}" in
  "") ;;
  --full) tier=full ;;
  *) echo "usage: ./test.sh [--full]  (unknown argument '$1')" >&2; exit 2 ;;
esac
source "$(dirname "$0")/scripts/common.sh"
source "$TSR_ROOT/scripts/timing.sh"
cd "$TSR_ROOT"
# What the default tier leaves out of each ctest phase: the tests labelled full, and the
# GoogleTest cases whose instantiation or suite is named Full... (cmake/tessera_test.cmake).
# And how long each fuzz target runs.
if [ "$tier" = full ]; then
  leave_out="" full_cases="^$" fuzz_seconds=15
else
  leave_out="full" full_cases="(^|/)Full" fuzz_seconds=3
fi
echo "tessera: test tier: $tier"
tsr_phase "Install (missing packages, data)"
tsr_install_missing
# PyTorch 2.x in its virtual environment (from PyPI, only when missing): the torch backend is
# built and checked against it and against Debian's 1.13.
torch2_python=$(tsr_torch2_python)
# The MLP trainer's test needs the digits set; without it that one test is skipped, said here.
tsr_fetch_digits >/dev/null ||
  echo "tessera: WARNING: no digits data set: Examples.TrainMlpUnderTsrun will be skipped"

tsr_phase "Format (.clang-format)"
scripts/check_format.sh

tsr_phase "Release build (build/)"
tsr_build build -DCMAKE_BUILD_TYPE=Release "-DTSR_TORCH_PYTHONS=/usr/bin/python3;$torch2_python"
# A python3 earlier on PATH without NumPy or torch must not leave the Python checks out
# unnoticed (cmake/python.cmake picks Debian's interpreter, which has them); nor may either
# torch's backend checks go missing.
for label in python torch1 torch2; do
  if ! ctest --test-dir build -N -L "$label" | grep -q "Total Tests: [1-9]"; then
    echo "tessera: no checks labelled $label in build/ (build/configure.log says why)"; exit 1
  fi
done
tsr_ctest "Release tests" --test-dir build --output-on-failure --timeout 900 -j"$(nproc)" ${leave_out:+-LE "$leave_out"} -E "$full_cases"

tsr_phase "Sanitizer build (build-asan/)"
# clang, not GCC: it compiles this tree about twice as fast at -O0 under ASan + UBSan, and its
# UBSan checks a few things more (calls through a function pointer of the wrong type).
tsr_build build-asan -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g1" -DTSR_SANITIZE=ON -DTSR_WITH_CUDA=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
# UCX's malloc/mmap hooks fight the sanitizer's allocator: turn them off for this run. The
# Python checks run after, on their own (the interpreter must load the ASan runtime first).
# hwloc unloads its plugins before LSan reports, so the few allocations they keep could be
# neither named nor suppressed: preloading the plugins keeps them mapped (scripts/lsan.supp).
hwloc_plugins=$(ls /usr/lib/*/hwloc/hwloc_pci.so /usr/lib/*/hwloc/hwloc_xml_libxml.so 2>/dev/null | tr '\n' ' ' || true)
LD_PRELOAD="$hwloc_plugins" \
UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none \
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:verify_asan_link_order=0" \
LSAN_OPTIONS="suppressions=$TSR_ROOT/scripts/lsan.supp" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  tsr_ctest "Tests under ASan + UBSan" --test-dir build-asan --output-on-failure --timeout 900 -j"$(nproc)" -LE "${leave_out:+$leave_out|}netns|python" -E "$full_cases"
# The interpreter is not instrumented: preloading the sanitizers' runtime (clang's has ASan and
# UBSan in one) lets it load the instrumented libtessera (ranks under tsrun inherit LD_PRELOAD).
# Leaks are not checked here: CPython keeps its own allocations at exit on purpose.
sanitizer_runtime=$(clang++ -print-file-name="libclang_rt.asan-$(uname -m).so")
LD_PRELOAD="$sanitizer_runtime $hwloc_plugins" \
UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none \
ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:verify_asan_link_order=0" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  tsr_ctest "Python checks under ASan + UBSan" --test-dir build-asan --output-on-failure --timeout 900 -j"$(nproc)" -L python -LE "${leave_out:+$leave_out|}netns" -E "$full_cases"

tsr_phase "Fuzz build (build-fuzz/)"
scripts/fuzz.sh --build
tsr_phase "Fuzz (short runs)"
# Every libFuzzer target on its seeds (docs/fuzzing.md); a warning without clang++.
scripts/fuzz.sh "$fuzz_seconds"
