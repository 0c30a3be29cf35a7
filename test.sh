#!/usr/bin/env bash
# ./test.sh: install what is missing, build, run every test (ctest), then the same unit and
# multi-rank tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
source "$(dirname "$0")/scripts/common.sh"
cd "$TSR_ROOT"
tsr_install_missing

echo "== Release build (build/)"
tsr_build build -DCMAKE_BUILD_TYPE=Release
echo "== Tests"
ctest --test-dir build --output-on-failure --timeout 900 -j"$(nproc)"

echo "== Sanitizer build (build-asan/)"
tsr_build build-asan -DCMAKE_BUILD_TYPE=Debug -DTSR_SANITIZE=ON -DTSR_WITH_CUDA=OFF
echo "== Tests under ASan + UBSan"
# UCX's malloc/mmap hooks fight the sanitizer's allocator: turn them off for this run.
UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none \
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
LSAN_OPTIONS="suppressions=$TSR_ROOT/scripts/lsan.supp:fast_unwind_on_malloc=0" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  ctest --test-dir build-asan --output-on-failure --timeout 900 -j"$(nproc)" -LE "slow|netns"
