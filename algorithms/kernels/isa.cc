#include "algorithms/kernels/isa.h"

#include <atomic>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace tsr::kernels {
namespace {

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) return Isa::kAvx2;
#endif
  return Isa::kPortable;
}

std::atomic<int>& activeSlot() {
  static std::atomic<int> slot{static_cast<int>(bestIsa())};
  return slot;
}

}  // namespace

Isa bestIsa() {
  static const Isa best = detect();
  return best;
}

Isa activeIsa() { return static_cast<Isa>(activeSlot().load(std::memory_order_relaxed)); }

bool setActiveIsa(Isa isa) {
  if (isa == Isa::kAvx2 && bestIsa() != Isa::kAvx2) return false;
  activeSlot().store(static_cast<int>(isa), std::memory_order_relaxed);
  return true;
}

bool cpuHasF16c() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = [] {
    __builtin_cpu_init();
#if defined(__clang__) && __clang_major__ < 15
    // Older clang knows no "f16c" here: CPUID.1:ECX.F16C, usable only where AVX is.
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
#else
    return __builtin_cpu_supports("f16c") != 0;
#endif
  }();
  return has;
#else
  return false;
#endif
}

const char* isaName(Isa isa) { return isa == Isa::kAvx2 ? "avx2" : "portable"; }

}  // namespace tsr::kernels
