// The CUDA StepKernels (algorithms/plan/cuda_step_kernels.cc) against the host ones, bit for
// bit: the direct device path's math (Marsit's step, the compressed tensor's codec). Needs a GPU: skipped without one
// (docs/gpu.md runs it on one); built only with CUDA.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
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
  // The kernels' stream is non-blocking: the copy's DMA must have ended before they read it
  // (a tensor step waits for the caller's event instead).
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
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
  // Marsit's momentum hand-off: g = out, prev = c, comp = comp, carry into work.
  ASSERT_TRUE(host.momentumHandOff(out.data(), c.data(), comp.data(), work.data(), n, 0.9f, nullptr).isOk());
  ASSERT_TRUE(dev.momentumHandOff(dout, dc, dcomp, dwork, n, 0.9f, dg).isOk());
  EXPECT_EQ(std::memcmp(fromDevice(dout, n).data(), out.data(), n * 4), 0);
  EXPECT_EQ(std::memcmp(fromDevice(dc, n).data(), c.data(), n * 4), 0);
  EXPECT_EQ(std::memcmp(fromDevice(dwork, n).data(), work.data(), n * 4), 0);
  EXPECT_FALSE(dev.checkMemory(g.data(), n * 4).isOk()) << "a host pointer passed as device memory";
  for (void* p : {static_cast<void*>(dg), static_cast<void*>(dc), static_cast<void*>(dwork), static_cast<void*>(dout),
                  static_cast<void*>(dcomp), static_cast<void*>(dbits), static_cast<void*>(dother)})
    cudaFree(p);
}

// The compressed tensor's codec passes (compressed/device_codec.h), CUDA against host.
TEST(CudaStepKernels, CodecKernelsMatchHostBitForBit) {
  auto cuda = algorithms::openCudaStepKernels();
  if (!cuda.isOk()) GTEST_SKIP() << cuda.status().message();
  algorithms::StepKernels& dev = *cuda.value();
  algorithms::HostStepKernels host;
  const size_t n = 5003, k = 61, words = (n + 63) / 64;
  std::vector<float> x(n), m(n), hostOut(n);
  for (size_t j = 0; j < n; ++j) {
    x[j] = j % 89 == 3 ? 0.0f : std::sin(0.37f * static_cast<float>(j + 1)) * 3.0f;
    m[j] = std::cos(0.11f * static_cast<float>(j)) * 0.25f;
  }
  float *dx = toDevice(x), *dm = toDevice(m), *dout = toDevice(hostOut);
  auto same = [&](const char* what) {
    EXPECT_EQ(std::memcmp(fromDevice(dout, n).data(), hostOut.data(), n * 4), 0) << what;
  };
  auto scan = dev.scanNonFinite(dx, n);
  ASSERT_TRUE(scan.isOk()) << scan.status().toString();
  EXPECT_EQ(scan.value(), n);
  std::vector<uint16_t> half(n);
  uint16_t* dhalf = toDevice(half);
  for (DataType t : {DataType::kF16, DataType::kBF16}) {
    ASSERT_TRUE(host.castTo(t, x.data(), n, half.data()).isOk());
    ASSERT_TRUE(dev.castTo(t, dx, n, dhalf).isOk());
    EXPECT_EQ(fromDevice(dhalf, n), half);
    ASSERT_TRUE(host.castFrom(t, half.data(), n, hostOut.data()).isOk());
    ASSERT_TRUE(dev.castFrom(t, dhalf, n, dout).isOk());
    same("cast back");
  }
  ASSERT_TRUE(host.scale(x.data(), n, 1.0f / 3, hostOut.data()).isOk());
  ASSERT_TRUE(dev.scale(dx, n, 1.0f / 3, dout).isOk());
  same("scale");
  std::vector<uint32_t> idx(k);
  uint32_t* didx = toDevice(idx);
  for (bool topk : {true, false}) {
    auto hk = topk ? host.topkSelect(x.data(), n, k, idx.data()) : host.randomkSelect(n, k, 9, 4, idx.data());
    auto dk = topk ? dev.topkSelect(dx, n, k, didx) : dev.randomkSelect(n, k, 9, 4, didx);
    ASSERT_TRUE(hk.isOk() && dk.isOk()) << dk.status().toString();
    EXPECT_EQ(hk.value(), dk.value());
    EXPECT_EQ(fromDevice(didx, k), idx);
    std::fill(hostOut.begin(), hostOut.end(), 0.0f);
    ASSERT_TRUE(dev.zero(dout, n * 4).isOk());
    ASSERT_TRUE(host.scatter(idx.data(), x.data(), k, hostOut.data()).isOk());
    ASSERT_TRUE(dev.scatter(didx, dx, k, dout).isOk());
    same("scatter");
  }
  EXPECT_EQ(dev.firstIndexOutOfRange(didx, k, idx[k / 2]).value(),
            host.firstIndexOutOfRange(idx.data(), k, idx[k / 2]).value());
  hostOut = m;
  ASSERT_TRUE(dev.copy(dout, dm, n * 4).isOk());
  ASSERT_TRUE(host.nesterovUpdate(x.data(), n, 0.9f, hostOut.data()).isOk());
  ASSERT_TRUE(dev.nesterovUpdate(dx, n, 0.9f, dout).isOk());
  same("nesterov update");
  ASSERT_TRUE(host.nesterovShift(x.data(), m.data(), n, 0.9f, hostOut.data()).isOk());
  ASSERT_TRUE(dev.nesterovShift(dx, dm, n, 0.9f, dout).isOk());
  same("nesterov shift");
  ASSERT_TRUE(host.efKeep(x.data(), n, hostOut.data()).isOk());
  ASSERT_TRUE(dev.efKeep(dx, n, dout).isOk());
  same("ef keep");
  const kernels::RngStream rng{0x5eed, 0, 3};
  std::vector<uint64_t> bits(words);
  uint64_t* dbits = toDevice(bits);
  EXPECT_EQ(host.signPack(x.data(), n, bits.data(), rng).value(), dev.signPack(dx, n, dbits, rng).value());
  EXPECT_EQ(fromDevice(dbits, words), bits);
  double sh = 0, sd = 0;
  float mh = 0, md = 0;
  ASSERT_TRUE(host.sumAbs(x.data(), n, &sh).isOk() && dev.sumAbs(dx, n, &sd).isOk());
  ASSERT_TRUE(host.maxAbs(x.data(), n, &mh).isOk() && dev.maxAbs(dx, n, &md).isOk());
  EXPECT_EQ(std::memcmp(&sh, &sd, sizeof sh), 0);
  EXPECT_EQ(std::memcmp(&mh, &md, sizeof mh), 0);
  // The scale blocks' sums: 4096 (one launch of 1024-element block sums, the last span
  // shorter) and 1000 (not a multiple of the block: one sumAbs a span).
  for (size_t span : {size_t{4096}, size_t{1000}}) {
    const size_t spans = (n + span - 1) / span;
    std::vector<double> perHost(spans), perDev(spans, -1.0);
    ASSERT_TRUE(host.sumAbsPerSpan(x.data(), n, span, perHost.data()).isOk());
    ASSERT_TRUE(dev.sumAbsPerSpan(dx, n, span, perDev.data()).isOk());
    EXPECT_EQ(std::memcmp(perHost.data(), perDev.data(), spans * sizeof(double)), 0) << "span " << span;
  }
  ASSERT_TRUE(host.signDecompress(bits.data(), n, 0.5f, hostOut.data()).isOk());
  ASSERT_TRUE(dev.signDecompress(dbits, n, 0.5f, dout).isOk());
  same("sign decompress");
  std::vector<int16_t> codes(n);
  int16_t* dcodes = toDevice(codes);
  ASSERT_TRUE(host.ditherQuantize(x.data(), n, mh, 7, kernels::DitherPartition::kNatural, rng, codes.data()).isOk());
  ASSERT_TRUE(dev.ditherQuantize(dx, n, md, 7, kernels::DitherPartition::kNatural, rng, dcodes).isOk());
  EXPECT_EQ(fromDevice(dcodes, n), codes);
  ASSERT_TRUE(host.ditherDequantize(codes.data(), n, mh, 7, kernels::DitherPartition::kNatural, hostOut.data()).isOk());
  ASSERT_TRUE(dev.ditherDequantize(dcodes, n, md, 7, kernels::DitherPartition::kNatural, dout).isOk());
  same("dither dequantize");
  // L2-normalized dithering: sum x^2 in the CPU's block order (doubles equal bit for bit, so
  // the scale, their float square root, too), then the same codes.
  double qh = 0, qd = 0;
  ASSERT_TRUE(host.sumSquares(x.data(), n, &qh).isOk());
  ASSERT_TRUE(dev.sumSquares(dx, n, &qd).isOk());
  EXPECT_EQ(std::memcmp(&qh, &qd, sizeof qh), 0) << qh << " vs " << qd;
  const float lh = kernels::ditherL2Scale(qh), ld = kernels::ditherL2Scale(qd);
  ASSERT_TRUE(host.ditherQuantize(x.data(), n, lh, 5, kernels::DitherPartition::kLinear, rng, codes.data()).isOk());
  ASSERT_TRUE(dev.ditherQuantize(dx, n, ld, 5, kernels::DitherPartition::kLinear, rng, dcodes).isOk());
  EXPECT_EQ(fromDevice(dcodes, n), codes);
  for (size_t m : {size_t{0}, size_t{1}, size_t{1024}, size_t{1025}}) {  // empty, one element, block edges
    ASSERT_TRUE(host.sumSquares(x.data(), m, &qh).isOk() && dev.sumSquares(dx, m, &qd).isOk());
    EXPECT_EQ(std::memcmp(&qh, &qd, sizeof qh), 0) << "m=" << m << ": " << qh << " vs " << qd;
  }
  for (void* p : {static_cast<void*>(dx), static_cast<void*>(dm), static_cast<void*>(dout), static_cast<void*>(dhalf),
                  static_cast<void*>(didx), static_cast<void*>(dbits), static_cast<void*>(dcodes)})
    cudaFree(p);
}

// Two-level kernels: the f16 intra-host average (reduce, divide, and both keeping what they
// drop), the cast residual (an overflowing element keeps 0) and a row block's sign words at
// its place (firstWord).
TEST(CudaStepKernels, TwoLevelKernelsMatchHostBitForBit) {
  auto cuda = algorithms::openCudaStepKernels();
  if (!cuda.isOk()) GTEST_SKIP() << cuda.status().message();
  algorithms::StepKernels& dev = *cuda.value();
  algorithms::HostStepKernels host;
  const size_t n = 3001;
  std::vector<float> x(n), r(n);
  for (size_t j = 0; j < n; ++j) x[j] = j % 97 == 5 ? 0.0f : std::sin(0.37f * static_cast<float>(j + 1)) * 3.0f;
  x[7] = 1e6f;  // overflows f16: no finite residual
  std::vector<uint16_t> a(n), b(n);
  ASSERT_TRUE(host.castTo(DataType::kF16, x.data(), n, a.data()).isOk());
  std::reverse_copy(a.begin(), a.end(), b.begin());
  float *dx = toDevice(x), *dr = toDevice(r);
  uint16_t *da = toDevice(a), *db = toDevice(b);
  ASSERT_TRUE(host.castResidual(DataType::kF16, x.data(), a.data(), n, r.data()).isOk());
  ASSERT_TRUE(dev.castResidual(DataType::kF16, dx, da, n, dr).isOk());
  EXPECT_EQ(r[7], 0.0f);
  EXPECT_EQ(std::memcmp(fromDevice(dr, n).data(), r.data(), n * sizeof(float)), 0);
  ASSERT_TRUE(host.reduce(a.data(), b.data(), n, DataType::kF16, ReduceOp::kSum).isOk());
  ASSERT_TRUE(dev.reduce(da, db, n, DataType::kF16, ReduceOp::kSum).isOk());
  ASSERT_TRUE(host.divide(a.data(), n, DataType::kF16, 3).isOk());
  ASSERT_TRUE(dev.divide(da, n, DataType::kF16, 3).isOk());
  EXPECT_EQ(fromDevice(da, n), a);
  std::vector<float> dropped(n, 0.0f);
  float* ddropped = toDevice(dropped);
  ASSERT_TRUE(host.reduceF16KeepingDropped(a.data(), b.data(), n, dropped.data()).isOk());
  ASSERT_TRUE(dev.reduceF16KeepingDropped(da, db, n, ddropped).isOk());
  ASSERT_TRUE(host.averageF16KeepingDropped(a.data(), n, 3, dropped.data()).isOk());
  ASSERT_TRUE(dev.averageF16KeepingDropped(da, n, 3, ddropped).isOk());
  EXPECT_EQ(fromDevice(da, n), a);
  EXPECT_EQ(std::memcmp(fromDevice(ddropped, n).data(), dropped.data(), n * sizeof(float)), 0);
  const kernels::RngStream rng{0x5eed, 1, 4};
  std::vector<uint64_t> words((n + 63) / 64);
  uint64_t* dwords = toDevice(words);
  auto badHost = host.signPack(x.data(), n, words.data(), rng, 37);
  auto badDev = dev.signPack(dx, n, dwords, rng, 37);
  ASSERT_TRUE(badDev.isOk()) << badDev.status().toString();
  EXPECT_EQ(badHost.value(), badDev.value());
  EXPECT_EQ(fromDevice(dwords, words.size()), words);
  for (void* p : std::initializer_list<void*>{dx, dr, da, db, ddropped, dwords}) cudaFree(p);
}

}  // namespace
}  // namespace tsr
