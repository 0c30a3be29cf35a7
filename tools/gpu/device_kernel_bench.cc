// tsr-device-kernel-bench: the CUDA kernels (algorithms/kernels/cuda) on D f32 elements in
// device memory, each timed with CUDA events (median of R launches after two warm-ups) against
// a device-to-device cudaMemcpy of the same D-element f32 input in the same run: the ratio is
// memcpy_time / kernel_time (>= 1: at least as fast as that copy). Each kernel's output is
// also compared with the CPU kernel's, bit for bit, on the whole input ("match").
//
// usage: tsr-device-kernel-bench [--count D] [--reps R] [--density f] [--json FILE]
//                                [--dump-input FILE] [--dump-topk FILE]
// --dump-input writes the input (raw f32) and --dump-topk the selected indices (raw u32,
// increasing), for tools/gpu/torch_topk.py to time torch.topk on the same tensor.
// Without a CUDA device it says so and exits 0 (nothing is timed).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/kernels/cast.h"
#include "algorithms/kernels/cuda/cuda_kernels.h"
#include "algorithms/kernels/sign.h"
#include "algorithms/kernels/sign_ops.h"
#include "algorithms/kernels/topk.h"

namespace {

using namespace tsr::kernels;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s: %s\n", what, cudaGetErrorName(e), cudaGetErrorString(e));
    std::exit(1);
  }
}
void check(int e, const char* what) { check(static_cast<cudaError_t>(e), what); }

template <typename T>
T* deviceAlloc(size_t n) {
  void* p = nullptr;
  check(cudaMalloc(&p, n * sizeof(T) + 16), "cudaMalloc");
  return static_cast<T*>(p);
}

template <typename T>
std::vector<T> toHost(const T* d, size_t n) {
  std::vector<T> h(n);
  check(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  return h;
}

// Median of reps timed launches (seconds) after two warm-ups.
double medianSeconds(int reps, const std::function<void()>& launch) {
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  launch();
  launch();
  check(cudaDeviceSynchronize(), "warm-up");
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(a);
    launch();
    cudaEventRecord(b);
    check(cudaEventSynchronize(b), "timed launch");
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms * 1e-3);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

bool writeFile(const std::string& path, const void* p, size_t bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = std::fwrite(p, 1, bytes, f) == bytes;
  return std::fclose(f) == 0 && ok;
}

struct Row {
  std::string name;
  double seconds;
  double target;  // minimum ratio, 0 = none
  bool match;
};

}  // namespace

int main(int argc, char** argv) {
  size_t count = size_t{64} << 20;
  int reps = 10;
  double density = 0.01;
  std::string json, dumpInput, dumpTopk;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--count")
      count = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--reps")
      reps = std::max(1, std::atoi(v.c_str()));
    else if (a == "--density")
      density = std::atof(v.c_str());
    else if (a == "--json")
      json = v;
    else if (a == "--dump-input")
      dumpInput = v;
    else if (a == "--dump-topk")
      dumpTopk = v;
    else
      count = 0;
  }
  if (count == 0 || argc % 2 == 0 || !(density > 0 && density <= 1)) {
    std::fprintf(
        stderr, "usage: %s [--count D] [--reps R] [--density f] [--json FILE] [--dump-input FILE] [--dump-topk FILE]\n",
        argv[0]);
    return 2;
  }
  int devices = 0;
  cudaError_t ce = cudaGetDeviceCount(&devices);
  if (ce != cudaSuccess || devices == 0) {
    std::printf("tsr-device-kernel-bench: no CUDA device (%s): nothing timed\n",
                ce == cudaSuccess ? "cudaGetDeviceCount found 0" : cudaGetErrorName(ce));
    return 0;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");

  // The CPU bench's data: a sum of three uniforms per element, deterministic.
  std::vector<float> x(count), z(count);
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
  const size_t words = wordsForElements(count);
  const size_t k = std::max<size_t>(1, static_cast<size_t>(density * static_cast<double>(count)));
  const RngStream rng{12345, 1, 7};

  float *dx = deviceAlloc<float>(count), *dy = deviceAlloc<float>(count), *dz = deviceAlloc<float>(count);
  uint64_t *ds = deviceAlloc<uint64_t>(words), *dv = deviceAlloc<uint64_t>(words), *dm = deviceAlloc<uint64_t>(words);
  uint16_t* dh = deviceAlloc<uint16_t>(count);
  unsigned long long* dbad = deviceAlloc<unsigned long long>(1);
  uint32_t* didx = deviceAlloc<uint32_t>(k);
  const size_t scratchBytes = cuda::topkScratchBytes(count, k);
  void* dscratch = deviceAlloc<char>(scratchBytes);
  check(cudaMemcpy(dx, x.data(), count * 4, cudaMemcpyHostToDevice), "input to device");
  check(cudaMemcpy(dz, z.data(), count * 4, cudaMemcpyHostToDevice), "input to device");
  check(cuda::signPack(dz, count, dv, rng, 0, dbad, nullptr), "signPack");

  std::vector<Row> rows;
  const double tMemcpy = medianSeconds(reps, [&] { cudaMemcpyAsync(dy, dx, count * 4, cudaMemcpyDeviceToDevice); });
  rows.push_back({"memcpy d2d f32 input", tMemcpy, 0, true});
  auto add = [&](const std::string& name, double target, const std::function<void()>& launch,
                 const std::function<bool()>& matches) {
    double s = medianSeconds(reps, launch);
    check(cudaDeviceSynchronize(), name.c_str());
    rows.push_back({name, s, target, matches()});
  };

  std::vector<uint64_t> cpuS(words), cpuV(words), cpuM(words);
  signPack(x.data(), count, cpuS.data(), rng, 0);
  signPack(z.data(), count, cpuV.data(), rng, 0);
  add(
      "sign pack", 0.7, [&] { cuda::signPack(dx, count, ds, rng, 0, dbad, nullptr); },
      [&] { return toHost(ds, words) == cpuS; });
  signMerge(cpuV.data(), cpuS.data(), cpuM.data(), words, 3, 1, rng, 0);
  add(
      "bit merge a=3 b=1", 0.5, [&] { cuda::signMerge(dv, ds, dm, words, 3, 1, rng, 0, nullptr); },
      [&] { return toHost(dm, words) == cpuM; });
  std::vector<float> cpuY(count);
  signDecompress(cpuM.data(), count, 0.01f, cpuY.data());
  add(
      "decompress eta*(2b-1)", 0.7, [&] { cuda::signDecompress(dm, count, 0.01f, dy, nullptr); },
      [&] { return toHost(dy, count) == cpuY; });
  std::vector<uint16_t> cpuH(count);
  castF32ToF16(x.data(), count, cpuH.data());
  add(
      "cast f32 -> f16", 0.7, [&] { cuda::castF32ToF16(dx, count, dh, nullptr); },
      [&] { return toHost(dh, count) == cpuH; });
  castF16ToF32(cpuH.data(), count, cpuY.data());
  add(
      "cast f16 -> f32", 0.7, [&] { cuda::castF16ToF32(dh, count, dy, nullptr); },
      [&] { return toHost(dy, count) == cpuY; });
  castF32ToBf16(x.data(), count, cpuH.data());
  add(
      "cast f32 -> bf16", 0.7, [&] { cuda::castF32ToBf16(dx, count, dh, nullptr); },
      [&] { return toHost(dh, count) == cpuH; });
  castBf16ToF32(cpuH.data(), count, cpuY.data());
  add(
      "cast bf16 -> f32", 0.7, [&] { cuda::castBf16ToF32(dh, count, dy, nullptr); },
      [&] { return toHost(dy, count) == cpuY; });
  add(
      "f32 sum reduceSumF32", 0, [&] { cuda::reduceSumF32(dy, dx, count, nullptr); }, [] { return true; });
  std::vector<uint32_t> cpuIdx(k), cpuScratch(topkScratchCount(count, k));
  const size_t cpuGot = topkSelect(x.data(), count, k, cpuIdx.data(), cpuScratch.data(), cpuScratch.size());
  add(
      "top-k", 0, [&] { cuda::topkSelect(dx, count, k, didx, dscratch, scratchBytes, nullptr); },
      [&] { return cpuGot == k && toHost(didx, k) == cpuIdx; });

  const double bytes = static_cast<double>(count) * 4.0;
  std::printf("tsr-device-kernel-bench: %s, D = %zu f32 elements (%.1f MiB), median of %d\n", prop.name, count,
              bytes / (1 << 20), reps);
  std::printf("%-26s %9s %9s %9s %8s %6s\n", "kernel", "ms", "GB/s", "x memcpy", "target", "match");
  bool allMatch = true;
  for (const Row& r : rows) {
    std::printf("%-26s %9.3f %9.1f %9.2f %8s %6s\n", r.name.c_str(), r.seconds * 1e3, bytes / r.seconds / 1e9,
                tMemcpy / r.seconds, r.target > 0 ? (">= " + std::to_string(r.target).substr(0, 4)).c_str() : "",
                r.match ? "yes" : "NO");
    allMatch = allMatch && r.match;
  }
  std::printf("top-k: k = %zu (density %g); torch.topk on the same tensor: tools/gpu/torch_topk.py\n", k, density);
  if (!json.empty()) {
    FILE* f = std::fopen(json.c_str(), "w");
    if (!f) return 1;
    std::fprintf(f, "{\"device\": \"%s\", \"count\": %zu, \"reps\": %d, \"k\": %zu, \"kernels\": [", prop.name, count,
                 reps, k);
    for (size_t i = 0; i < rows.size(); ++i)
      std::fprintf(
          f, "%s\n  {\"name\": \"%s\", \"ms\": %.4f, \"ratio\": %.3f, \"target\": %.2f, \"meets\": %s, \"match\": %s}",
          i ? "," : "", rows[i].name.c_str(), rows[i].seconds * 1e3, tMemcpy / rows[i].seconds, rows[i].target,
          rows[i].target == 0 || tMemcpy / rows[i].seconds >= rows[i].target ? "true" : "false",
          rows[i].match ? "true" : "false");
    std::fprintf(f, "\n]}\n");
    std::fclose(f);
  }
  if (!dumpInput.empty() && !writeFile(dumpInput, x.data(), count * 4)) return 1;
  if (!dumpTopk.empty() && !writeFile(dumpTopk, toHost(didx, k).data(), k * 4)) return 1;
  return allMatch ? 0 : 1;
}
