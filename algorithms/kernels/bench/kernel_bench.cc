// tsr-kernel-bench: throughput of the hot kernels on D f32 elements, against a memcpy of the
// same D-element f32 input in the same run. "GB/s" is logical: D * 4 bytes / time, so the
// ratio column is memcpy_time / kernel_time (>= 1 means at least as fast as the memcpy).
//
// usage: tsr-kernel-bench [--count D] [--reps R] [--isa portable|avx2] [--density 0.01]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/kernels/cast.h"
#include "algorithms/kernels/isa.h"
#include "algorithms/kernels/reduce.h"
#include "algorithms/kernels/sign.h"
#include "algorithms/kernels/sign_ops.h"
#include "algorithms/kernels/topk.h"

namespace {

using Clock = std::chrono::steady_clock;

double bestSeconds(int reps, const std::function<void()>& fn) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    fn();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, s);
  }
  return best;
}

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--count D] [--reps R] [--isa portable|avx2] [--density f]\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tsr::kernels;
  size_t count = size_t{64} << 20;
  int reps = 3;
  double density = 0.01;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage(argv[0]);
    std::string v = argv[++i];
    if (a == "--count") {
      count = std::strtoull(v.c_str(), nullptr, 10);
    } else if (a == "--reps") {
      reps = std::max(1, std::atoi(v.c_str()));
    } else if (a == "--density") {
      density = std::atof(v.c_str());
    } else if (a == "--isa") {
      if (v != "portable" && v != "avx2") return usage(argv[0]);
      if (!setActiveIsa(v == "avx2" ? Isa::kAvx2 : Isa::kPortable)) {
        std::fprintf(stderr, "isa %s not supported by this CPU\n", v.c_str());
        return 2;
      }
    } else {
      return usage(argv[0]);
    }
  }
  if (count == 0) return usage(argv[0]);
  const size_t words = wordsForElements(count);
  std::vector<float> x(count), y(count), z(count);
  std::vector<uint64_t> s(words), v(words), merged(words);
  // Gaussian-ish data: sum of uniforms, deterministic.
  uint64_t st = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < count; ++i) {
    float acc = 0.0f;
    for (int k = 0; k < 3; ++k) {
      st = st * 6364136223846793005ull + 1442695040888963407ull;
      acc += static_cast<float>(st >> 40) * (1.0f / 16777216.0f) - 0.5f;
    }
    x[i] = acc;
    z[i] = -acc * 0.5f;
  }
  std::memset(y.data(), 0, count * sizeof(float));
  const RngStream rng{12345, 1, 7};
  signPack(z.data(), count, v.data(), rng, 0);
  const size_t k = std::max<size_t>(1, static_cast<size_t>(density * static_cast<double>(count)));
  std::vector<uint32_t> idx(k), scratch(topkScratchCount(count, k));
  std::fill(merged.begin(), merged.end(), 0);
  std::fill(idx.begin(), idx.end(), 0);
  std::fill(scratch.begin(), scratch.end(), 0);

  const double bytes = static_cast<double>(count) * 4.0;
  std::printf("tsr-kernel-bench: D = %zu f32 elements (%.1f MiB), isa %s, best of %d\n", count, bytes / (1 << 20),
              isaName(activeIsa()), reps);
  double tMemcpy = bestSeconds(reps, [&] { std::memcpy(y.data(), x.data(), count * 4); });
  struct Row {
    const char* name;
    double seconds;
    const char* target;
  };
  std::vector<Row> rows;
  rows.push_back({"memcpy f32 input", tMemcpy, ""});
  rows.push_back({"sign pack", bestSeconds(reps, [&] { signPack(x.data(), count, s.data(), rng, 0); }), ">= 1.00"});
  rows.push_back({"bit merge a=3 b=1 (rng incl.)",
                  bestSeconds(reps, [&] { signMerge(v.data(), s.data(), merged.data(), words, 3, 1, rng, 0); }),
                  ">= 0.50"});
  rows.push_back({"bit merge a=1 b=1 (rng incl.)",
                  bestSeconds(reps, [&] { signMerge(v.data(), s.data(), merged.data(), words, 1, 1, rng, 0); }),
                  ">= 0.50"});
  rows.push_back({"decompress eta*(2b-1)",
                  bestSeconds(reps, [&] { signDecompress(merged.data(), count, 0.01f, y.data()); }), ">= 0.50"});
  rows.push_back(
      {"f32 sum reduceInto",
       bestSeconds(reps, [&] { reduceInto(y.data(), x.data(), count, tsr::DataType::kF32, tsr::ReduceOp::kSum); }),
       ""});
  // Casts (fp16 / bf16 compressors, two-level Marsit intra=fp16): read D f32 and write D halves,
  // or the reverse. The f16 ones need F16C besides AVX2 for their vector path.
  std::vector<uint16_t> half(count);
  rows.push_back({"cast f32 -> f16", bestSeconds(reps, [&] { castF32ToF16(x.data(), count, half.data()); }), ""});
  rows.push_back({"cast f16 -> f32", bestSeconds(reps, [&] { castF16ToF32(half.data(), count, y.data()); }), ""});
  rows.push_back({"cast f32 -> bf16", bestSeconds(reps, [&] { castF32ToBf16(x.data(), count, half.data()); }), ""});
  rows.push_back({"cast bf16 -> f32", bestSeconds(reps, [&] { castBf16ToF32(half.data(), count, y.data()); }), ""});
  // Half sums (dense allreduce of f16 / bf16): read 2 x D halves, write D halves.
  std::vector<uint16_t> half2(half);
  rows.push_back(
      {"f16 sum reduceInto",
       bestSeconds(reps,
                   [&] { reduceInto(half2.data(), half.data(), count, tsr::DataType::kF16, tsr::ReduceOp::kSum); }),
       ""});
  rows.push_back(
      {"bf16 sum reduceInto",
       bestSeconds(reps,
                   [&] { reduceInto(half2.data(), half.data(), count, tsr::DataType::kBF16, tsr::ReduceOp::kSum); }),
       ""});
  size_t got = 0;
  rows.push_back(
      {"top-k",
       bestSeconds(reps, [&] { got = topkSelect(x.data(), count, k, idx.data(), scratch.data(), scratch.size()); }),
       ">= 0.25"});
  std::printf("%-32s %10s %10s %10s %8s\n", "kernel", "ms", "GB/s", "x memcpy", "target");
  for (const Row& r : rows) {
    std::printf("%-32s %10.2f %10.2f %10.2f %8s\n", r.name, r.seconds * 1e3, bytes / r.seconds / 1e9,
                tMemcpy / r.seconds, r.target);
  }
  std::printf("f16 casts and sums: %s\n", activeIsa() == Isa::kAvx2 && cpuHasF16c() ? "F16C" : "portable");
  std::printf("top-k: k = %zu (density %g), selected %zu\n", k, density, got);
  return got == std::min(k, count) ? 0 : 1;
}
