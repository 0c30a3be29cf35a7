// CUDA kernels against the CPU kernels. Built only with TSR_CUDA_ENABLED; without a GPU every
// test is skipped (docs/gpu.md runs them on one), but the binary still proves the CUDA kernels link.
#include <cuda_runtime.h>

#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/kernels/cast.h"
#include "algorithms/kernels/cuda/cuda_kernels.h"
#include "algorithms/kernels/dithering.h"
#include "algorithms/kernels/randomk.h"
#include "algorithms/kernels/sign.h"
#include "algorithms/kernels/sign_ops.h"
#include "algorithms/kernels/topk.h"

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
  const size_t n = 64 * 3000 + 13, words = wordsForElements(n);  // several warps and blocks, a partial word
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
  ASSERT_EQ(cuda::signDecompress(ds, n - 1, 0.5f, dy + 1, nullptr), 0);  // not 16-byte aligned
  cpuY.assign(n, 0.0f);
  signDecompress(cpuS.data(), n - 1, 0.5f, cpuY.data());
  EXPECT_EQ(toHost(dy + 1, n - 1), std::vector<float>(cpuY.begin(), cpuY.begin() + (n - 1)));
  std::vector<uint16_t> h16(n);
  castF32ToF16(x.data(), n, h16.data());
  uint16_t* d16 = toDevice(h16);
  ASSERT_EQ(cuda::castF32ToF16(dx, n, d16, nullptr), 0);
  EXPECT_EQ(toHost(d16, n), h16);
  // The first non-finite element is found: in a word's upper half, in a later block, the last.
  for (size_t firstBad : {size_t{64 * 7 + 40}, size_t{64 * 2100 + 3}, n - 1}) {
    std::vector<float> xb = x;
    xb[firstBad] = std::numeric_limits<float>::quiet_NaN();
    if (firstBad + 100 < n) xb[firstBad + 100] = std::numeric_limits<float>::infinity();
    cudaMemcpy(dx, xb.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(dbad, badInit.data(), sizeof(unsigned long long), cudaMemcpyHostToDevice);
    ASSERT_EQ(cuda::signPack(dx, n, ds, rng, 7, dbad, nullptr), 0);
    cudaDeviceSynchronize();
    EXPECT_EQ(toHost(dbad, 1)[0], firstBad);
  }
  for (void* p : {static_cast<void*>(dx), static_cast<void*>(ds), static_cast<void*>(dv), static_cast<void*>(dout),
                  static_cast<void*>(dbad), static_cast<void*>(dy), static_cast<void*>(d16)})
    cudaFree(p);
}

// The four casts, 8 elements a thread where both pointers are 16-byte aligned and one element
// a thread where not, with a partial last group and the values that round specially.
TEST(Cuda, CastsMatchCpuAlignedOrNot) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device: CUDA kernels linked but not run";
  const size_t n = 8 * 5000 + 5;
  std::mt19937 gen(3);
  std::normal_distribution<float> dist(0.0f, 100.0f);
  std::vector<float> x(n + 1);
  for (float& v : x) v = dist(gen);
  const float special[] = {0.0f,
                           -0.0f,
                           65504.0f,
                           65520.0f,
                           1e6f,
                           -1e6f,
                           1e-8f,
                           5.9604645e-8f,
                           1e-40f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN()};
  for (size_t j = 0; j < std::size(special); ++j) x[7 * j + 3] = special[j];
  float* dx = toDevice(x);
  std::vector<uint16_t> zeros16(n + 1, 0);
  std::vector<float> zeros32(n + 1, 0.0f);
  uint16_t* dh = toDevice(zeros16);
  float* dy = toDevice(zeros32);
  for (size_t shift : {size_t{0}, size_t{1}}) {  // 1: both sides off 16-byte alignment
    for (bool bf : {false, true}) {
      std::vector<uint16_t> h(n);
      (bf ? castF32ToBf16 : castF32ToF16)(x.data() + shift, n, h.data());
      ASSERT_EQ((bf ? cuda::castF32ToBf16 : cuda::castF32ToF16)(dx + shift, n, dh + shift, nullptr), 0);
      cudaDeviceSynchronize();
      EXPECT_EQ(toHost(dh + shift, n), h) << (bf ? "bf16" : "f16") << " shift " << shift;
      std::vector<float> y(n);
      (bf ? castBf16ToF32 : castF16ToF32)(h.data(), n, y.data());
      ASSERT_EQ((bf ? cuda::castBf16ToF32 : cuda::castF16ToF32)(dh + shift, n, dy + shift, nullptr), 0);
      cudaDeviceSynchronize();
      std::vector<float> got = toHost(dy + shift, n);
      EXPECT_EQ(0, std::memcmp(got.data(), y.data(), n * sizeof(float)))
          << (bf ? "bf16" : "f16") << " back, shift " << shift;
    }
  }
  for (void* p : {static_cast<void*>(dx), static_cast<void*>(dh), static_cast<void*>(dy)}) cudaFree(p);
}

// Device scratch of `bytes`, freed at scope exit.
struct DeviceScratch {
  void* p = nullptr;
  explicit DeviceScratch(size_t bytes) { cudaMalloc(&p, bytes ? bytes : 1); }
  ~DeviceScratch() { cudaFree(p); }
};

TEST(Cuda, RandomkMatchesCpu) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device: CUDA kernels linked but not run";
  for (size_t n : {size_t{1}, size_t{64}, size_t{1000}, size_t{100003}}) {
    for (size_t k : {size_t{1}, n / 10 + 1, n}) {
      std::vector<uint64_t> bitmap(randomkBitmapWords(n));
      std::vector<uint32_t> cpu(k);
      cpu.resize(randomkSelect(n, k, 7, 3, bitmap.data(), cpu.data()));
      uint32_t* d = toDevice(std::vector<uint32_t>(cpu.size(), 0));
      const size_t bytes = cuda::randomkScratchBytes(n, k);
      DeviceScratch scratch(bytes);
      ASSERT_EQ(cuda::randomkSelect(n, k, 7, 3, d, scratch.p, bytes, nullptr), 0);
      EXPECT_EQ(cuda::randomkSelect(n, k, 7, 3, d, scratch.p, bytes - 1, nullptr),
                static_cast<int>(cudaErrorInvalidValue));
      cudaDeviceSynchronize();
      EXPECT_EQ(toHost(d, cpu.size()), cpu) << "n " << n << " k " << k;
      cudaFree(d);
    }
  }
}

TEST(Cuda, TopkMatchesCpuWithTies) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device: CUDA kernels linked but not run";
  const size_t n = 200003;
  std::mt19937 gen(2);
  std::normal_distribution<float> dist;
  std::vector<float> x(n);
  // Few distinct magnitudes, both signs: most of the k-th magnitude's ties must be cut by index.
  for (float& v : x) v = static_cast<float>(static_cast<int>(dist(gen) * 3)) * (gen() % 2 ? 1.f : -1.f);
  float* dx = toDevice(x);
  for (size_t k : {size_t{1}, size_t{100}, size_t{5000}, n / 3, n}) {
    std::vector<uint32_t> scratchCpu(topkScratchCount(n, k)), cpu(k);
    cpu.resize(topkSelect(x.data(), n, k, cpu.data(), scratchCpu.data(), scratchCpu.size()));
    uint32_t* d = toDevice(std::vector<uint32_t>(cpu.size(), 0));
    const size_t bytes = cuda::topkScratchBytes(n, k);
    DeviceScratch scratch(bytes);
    ASSERT_EQ(cuda::topkSelect(dx, n, k, d, scratch.p, bytes, nullptr), 0);
    cudaDeviceSynchronize();
    EXPECT_EQ(toHost(d, cpu.size()), cpu) << "k " << k;
    cudaFree(d);
  }
  cudaFree(dx);
}

// Shapes at the edges of the radix select: every magnitude equal, tiny inputs, tile boundaries.
TEST(Cuda, TopkMatchesCpuAtTheEdges) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device: CUDA kernels linked but not run";
  std::mt19937 gen(4);
  std::normal_distribution<float> dist;
  struct Case {
    size_t n, k;
    bool equal;
  };
  for (Case c : {Case{5000, 7, true}, Case{3, 2, false}, Case{2, 1, true}, Case{4096 * 3 + 1, 4096, false},
                 Case{4096 * 3 + 1, 4096 * 3, false}, Case{100000, 99999, false}}) {
    std::vector<float> x(c.n);
    for (size_t j = 0; j < c.n; ++j) x[j] = c.equal ? (j % 2 ? -0.0f : 0.0f) : dist(gen);
    float* dx = toDevice(x);
    std::vector<uint32_t> scratchCpu(topkScratchCount(c.n, c.k)), cpu(c.k);
    cpu.resize(topkSelect(x.data(), c.n, c.k, cpu.data(), scratchCpu.data(), scratchCpu.size()));
    uint32_t* d = toDevice(std::vector<uint32_t>(cpu.size(), 0));
    const size_t bytes = cuda::topkScratchBytes(c.n, c.k);
    DeviceScratch scratch(bytes);
    ASSERT_EQ(cuda::topkSelect(dx, c.n, c.k, d, scratch.p, bytes, nullptr), 0);
    cudaDeviceSynchronize();
    EXPECT_EQ(toHost(d, cpu.size()), cpu) << "n " << c.n << " k " << c.k;
    cudaFree(d);
    cudaFree(dx);
  }
}

TEST(Cuda, DitherMatchesCpu) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device: CUDA kernels linked but not run";
  const size_t n = 100003;
  std::mt19937 gen(3);
  std::normal_distribution<float> dist;
  std::vector<float> x(n);
  for (float& v : x) v = dist(gen);
  x[1] = 0.0f;
  float* dx = toDevice(x);
  int16_t* dcodes = toDevice(std::vector<int16_t>(n, 0));
  float* dout = toDevice(std::vector<float>(n, 0.0f));
  const RngStream rng{11, 1, 4};
  for (auto partition : {DitherPartition::kLinear, DitherPartition::kNatural}) {
    for (uint32_t s : {1u, 4u, 15u}) {
      const float scale = ditherScale(x.data(), n, DitherNormalize::kMax);
      std::vector<int16_t> codes(n);
      std::vector<float> out(n);
      ditherQuantize(x.data(), n, scale, s, partition, rng, codes.data());
      ditherDequantize(codes.data(), n, scale, s, partition, out.data());
      ASSERT_EQ(cuda::ditherQuantize(dx, n, scale, s, partition, rng, dcodes, nullptr), 0);
      ASSERT_EQ(cuda::ditherDequantize(dcodes, n, scale, s, partition, dout, nullptr), 0);
      cudaDeviceSynchronize();
      EXPECT_EQ(toHost(dcodes, n), codes) << "s " << s;
      EXPECT_EQ(toHost(dout, n), out) << "s " << s;
    }
  }
  for (void* p : {static_cast<void*>(dx), static_cast<void*>(dcodes), static_cast<void*>(dout)}) cudaFree(p);
}

}  // namespace
}  // namespace tsr::kernels
