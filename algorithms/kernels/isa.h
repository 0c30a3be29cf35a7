// Runtime choice of the CPU instruction set used by the kernels. Every kernel with an AVX2
// version also has a portable one producing bit-identical results (tests compare them); the
// active one defaults to the best the CPU supports and can be forced for tests and benchmarks.
#pragma once

namespace tsr::kernels {

enum class Isa { kPortable = 0, kAvx2 = 1 };

// The best instruction set this CPU supports (AVX2 when __builtin_cpu_supports("avx2")).
Isa bestIsa();
// The instruction set kernels use now.
Isa activeIsa();
// Forces an instruction set; false (and no change) when the CPU does not support it.
bool setActiveIsa(Isa isa);
const char* isaName(Isa isa);
// Whether the CPU has F16C (vcvtph2ps / vcvtps2ph). The f16 casts take their AVX2 path only
// when it is active AND the CPU has F16C; the bf16 casts need AVX2 alone.
bool cpuHasF16c();

}  // namespace tsr::kernels
