// CUDA kernels against the CPU kernels. Built only with TSR_CUDA_ENABLED; without a GPU (this
// project's machines) every test is skipped, but the binary still proves the CUDA kernels link.
#include <cuda_runtime.h>

#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/kernels/cast.h"
#include "algorithms/kernels/cuda/cuda_kernels.h"
#include "algorithms/kernels/sign.h"
#include "algorithms/kernels/sign_ops.h"

namespace tsr::kernels {
namespace {

bool haveGpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

template <typename T>
T* toDevice(const std::vector<T>& h) {
  T* d = nullptr;
  if (cudaMalloc(&d, h.size() * sizeof(T) + 8) != cudaSuccess) return nullptr;
  cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}

template <typename T>
std::vector<T> toHost(const T* d, size_t n) {
  std::vector<T> h(n);
  cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
  return h;
}

TEST(Cuda, SignKernelsMatchCpu) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device: CUDA kernels linked but not run";
  const size_t n = 64 * 100 + 13, words = wordsForElements(n);
  std::mt19937 gen(1);
  std::normal_distribution<float> dist;
  std::vector<float> x(n);
  for (float& v : x) v = dist(gen);
  for (size_t j = 0; j < n; j += 9) x[j] = 0.0f;
  const RngStream rng{5, 2, 3};
  std::vector<uint64_t> cpuS(words), cpuV(words), cpuOut(words);
  signPack(x.data(), n, cpuS.data(), rng, 7);
  for (size_t w = 0; w < words; ++w) cpuV[w] = cpuS[w] * 0x9E3779B97F4A7C15ull;
  signMerge(cpuV.data(), cpuS.data(), cpuOut.data(), words, 3, 2, rng, 7);

  float* dx = toDevice(x);
  std::vector<uint64_t> zeros(words, 0);
  uint64_t* ds = toDevice(zeros);
  uint64_t* dv = toDevice(cpuV);
  uint64_t* dout = toDevice(zeros);
  std::vector<unsigned long long> badInit{n};
  unsigned long long* dbad = toDevice(badInit);
  ASSERT_EQ(cuda::signPack(dx, n, ds, rng, 7, dbad, nullptr), 0);
  ASSERT_EQ(cuda::signMerge(dv, ds, dout, words, 3, 2, rng, 7, nullptr), 0);
  cudaDeviceSynchronize();
  EXPECT_EQ(toHost(ds, words), cpuS);
  EXPECT_EQ(toHost(dout, words), cpuOut);
  EXPECT_EQ(toHost(dbad, 1)[0], n);
  float* dy = toDevice(x);
  ASSERT_EQ(cuda::signDecompress(ds, n, 0.5f, dy, nullptr), 0);
  std::vector<float> cpuY(n);
  signDecompress(cpuS.data(), n, 0.5f, cpuY.data());
  EXPECT_EQ(toHost(dy, n), cpuY);
  std::vector<uint16_t> h16(n);
  castF32ToF16(x.data(), n, h16.data());
  uint16_t* d16 = toDevice(h16);
  ASSERT_EQ(cuda::castF32ToF16(dx, n, d16, nullptr), 0);
  EXPECT_EQ(toHost(d16, n), h16);
  for (void* p : {static_cast<void*>(dx), static_cast<void*>(ds), static_cast<void*>(dv),
                  static_cast<void*>(dout), static_cast<void*>(dbad), static_cast<void*>(dy),
                  static_cast<void*>(d16)})
    cudaFree(p);
}

}  // namespace
}  // namespace tsr::kernels
