// The CUDA StepKernels (algorithms/plan/cuda_step_kernels.cc) against the host ones, bit for
// bit: the direct device path's math. Needs a GPU: skipped without one (always, here), so it
// has NEVER RUN; built only with CUDA.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "algorithms/plan/step_kernels.h"

namespace tsr {
namespace {

template <typename T>
T* toDevice(const std::vector<T>& v) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, v.size() * sizeof(T) + 1), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return static_cast<T*>(p);
}

template <typename T>
std::vector<T> fromDevice(const T* p, size_t n) {
  std::vector<T> v(n);
  EXPECT_EQ(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

TEST(CudaStepKernels, MatchHostKernelsBitForBit) {
  auto cuda = algorithms::openCudaStepKernels();
  if (!cuda.isOk()) GTEST_SKIP() << cuda.status().message();
  algorithms::StepKernels& dev = *cuda.value();
  algorithms::HostStepKernels host;
  const size_t n = 3001, words = (n + 63) / 64;
  std::vector<float> g(n), c(n);
  for (size_t j = 0; j < n; ++j) {
    g[j] = j % 97 == 5 ? 0.0f : std::sin(0.37f * static_cast<float>(j + 1)) * 3.0f;
    c[j] = std::cos(0.11f * static_cast<float>(j)) * 0.25f;
  }
  const kernels::RngStream rng{0x5eed, 2, 7};
  std::vector<float> work(n), out(n), comp(n);
  std::vector<uint64_t> bits(words), other(words, 0x5555aaaa5555aaaaull);
  double sumHost = 0, sumDev = 0;
  auto badHost = host.signPrepare(g.data(), c.data(), n, work.data(), bits.data(), rng, &sumHost);
  float *dg = toDevice(g), *dc = toDevice(c), *dwork = toDevice(work), *dout = toDevice(out), *dcomp = toDevice(comp);
  uint64_t *dbits = toDevice(std::vector<uint64_t>(words)), *dother = toDevice(other);
  auto badDev = dev.signPrepare(dg, dc, n, dwork, dbits, rng, &sumDev);
  ASSERT_TRUE(badDev.isOk()) << badDev.status().toString();
  EXPECT_EQ(badHost.value(), badDev.value());
  EXPECT_EQ(std::memcmp(&sumHost, &sumDev, sizeof sumHost), 0) << sumHost << " vs " << sumDev;
  EXPECT_EQ(fromDevice(dbits, words), bits);
  ASSERT_TRUE(host.signMerge(other.data(), bits.data(), bits.data(), words, 3, 1, rng, 11).isOk());
  ASSERT_TRUE(dev.signMerge(dother, dbits, dbits, words, 3, 1, rng, 11).isOk());
  EXPECT_EQ(fromDevice(dbits, words), bits);
  ASSERT_TRUE(host.signFinish(work.data(), bits.data(), n, 0.75f, out.data(), comp.data()).isOk());
  ASSERT_TRUE(dev.signFinish(dwork, dbits, n, 0.75f, dout, dcomp).isOk());
  EXPECT_EQ(std::memcmp(fromDevice(dout, n).data(), out.data(), n * 4), 0);
  EXPECT_EQ(std::memcmp(fromDevice(dcomp, n).data(), comp.data(), n * 4), 0);
  ASSERT_TRUE(host.reduce(out.data(), comp.data(), n, DataType::kF32, ReduceOp::kSum).isOk());
  ASSERT_TRUE(dev.reduce(dout, dcomp, n, DataType::kF32, ReduceOp::kSum).isOk());
  ASSERT_TRUE(host.divide(out.data(), n, DataType::kF32, 3).isOk());
  ASSERT_TRUE(dev.divide(dout, n, DataType::kF32, 3).isOk());
  EXPECT_EQ(std::memcmp(fromDevice(dout, n).data(), out.data(), n * 4), 0);
  EXPECT_FALSE(dev.checkMemory(g.data(), n * 4).isOk()) << "a host pointer passed as device memory";
  for (void* p : {static_cast<void*>(dg), static_cast<void*>(dc), static_cast<void*>(dwork), static_cast<void*>(dout),
                  static_cast<void*>(dcomp), static_cast<void*>(dbits), static_cast<void*>(dother)})
    cudaFree(p);
}

}  // namespace
}  // namespace tsr
