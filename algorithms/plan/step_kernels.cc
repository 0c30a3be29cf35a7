#include "algorithms/plan/step_kernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "algorithms/kernels/cast.h"
#include "algorithms/kernels/cast_ops.h"
#include "algorithms/kernels/feedback_ops.h"
#include "algorithms/kernels/randomk.h"
#include "algorithms/kernels/reduce.h"
#include "algorithms/kernels/sign.h"
#include "algorithms/kernels/topk.h"

namespace tsr::algorithms {

Status StepKernels::sumAbsPerSpan(const float* x, size_t count, size_t span, double* sums) {
  if (span == 0) return Status(Code::kInvalidArgument, "sum |x| per span: a span of 0 elements");
  for (size_t b = 0; b * span < count; ++b)
    TSR_RETURN_IF_ERROR(sumAbs(x + b * span, std::min(span, count - b * span), &sums[b]));
  return Status::ok();
}

void sumPartsPerSpan(const double* parts, size_t partCount, size_t m, double* sums) {
  for (size_t s = 0; s * m < partCount; ++s) {
    double total = 0.0;
    for (size_t p = s * m; p < std::min(partCount, (s + 1) * m); ++p) total += parts[p];
    sums[s] = total;
  }
}

Result<void*> HostStepKernels::allocate(size_t bytes) {
  void* p = std::calloc(bytes ? bytes : 1, 1);
  if (!p) return Status(Code::kInternal, "host step kernels: out of memory for " + std::to_string(bytes) + " bytes");
  return p;
}

void HostStepKernels::release(void* p) { std::free(p); }

Status HostStepKernels::checkMemory(const void* p, size_t bytes) const {
  if (!p && bytes) return Status(Code::kInvalidArgument, "the buffer is NULL");
  return Status::ok();
}

Status HostStepKernels::copy(void* dst, const void* src, size_t bytes) {
  if (bytes && dst != src) std::memmove(dst, src, bytes);
  return Status::ok();
}

Status HostStepKernels::readToHost(void* host, const void* src, size_t bytes) {
  if (bytes) std::memcpy(host, src, bytes);  // not copy(): a derived fake counts that as device-to-device
  return Status::ok();
}

Status HostStepKernels::zero(void* p, size_t bytes) {
  if (bytes) std::memset(p, 0, bytes);
  return Status::ok();
}

Status HostStepKernels::reduce(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op) {
  kernels::reduceInto(dst, src, count, dtype, op);
  return Status::ok();
}

Status HostStepKernels::divide(void* data, size_t count, DataType dtype, uint64_t divisor) {
  kernels::divideInPlace(data, count, dtype, divisor);
  return Status::ok();
}

Status HostStepKernels::reduceF16KeepingDropped(uint16_t* dst, const uint16_t* src, size_t count, float* dropped) {
  kernels::sumF16KeepingDropped(dst, src, count, dropped);
  return Status::ok();
}

Status HostStepKernels::averageF16KeepingDropped(uint16_t* data, size_t count, uint64_t divisor, float* dropped) {
  kernels::averageF16KeepingDropped(data, count, static_cast<float>(divisor), dropped);
  return Status::ok();
}

Status HostStepKernels::signMerge(const uint64_t* v, const uint64_t* s, uint64_t* out, size_t words, uint32_t a,
                                  uint32_t b, const kernels::RngStream& rng, uint64_t firstWord) {
  kernels::signMerge(v, s, out, words, a, b, rng, firstWord);
  return Status::ok();
}

Result<size_t> HostStepKernels::signPrepare(const float* g, const float* c, size_t count, float* work, uint64_t* words,
                                            const kernels::RngStream& rng, double* sumAbs) {
  return kernels::signPrepare(g, c, count, work, words, rng, 0, sumAbs);
}

Result<size_t> HostStepKernels::addScan(const float* g, const float* c, size_t count, float* work) {
  for (size_t j = 0; j < count; ++j) work[j] = g[j] + c[j];
  return kernels::firstNonFinite(work, count);
}

Status HostStepKernels::signFinish(const float* work, const uint64_t* words, size_t count, float eta, float* out,
                                   float* comp) {
  kernels::signFinish(work, words, count, eta, out, comp);
  return Status::ok();
}

Status HostStepKernels::momentumHandOff(float* g, float* prev, const float* comp, float* carry, size_t count, float mu,
                                        float*) {
  kernels::momentumHandOff(g, prev, comp, carry, count, mu);
  return Status::ok();
}

Result<size_t> HostStepKernels::scanNonFinite(const float* x, size_t count) {
  return kernels::firstNonFinite(x, count);
}

Status HostStepKernels::writeFromHost(void* dst, const void* host, size_t bytes) {
  if (bytes) std::memcpy(dst, host, bytes);  // not copy(): see readToHost
  return Status::ok();
}

Status HostStepKernels::castTo(DataType to, const float* in, size_t count, uint16_t* out) {
  if (to == DataType::kF16)
    kernels::castF32ToF16(in, count, out);
  else if (to == DataType::kBF16)
    kernels::castF32ToBf16(in, count, out);
  else
    return Status(Code::kInvalidArgument, std::string("cast of f32 to ") + dataTypeName(to) + ": only f16, bf16");
  return Status::ok();
}

Status HostStepKernels::castFrom(DataType from, const uint16_t* in, size_t count, float* out) {
  if (from == DataType::kF16)
    kernels::castF16ToF32(in, count, out);
  else if (from == DataType::kBF16)
    kernels::castBf16ToF32(in, count, out);
  else
    return Status(Code::kInvalidArgument, std::string("cast to f32 of ") + dataTypeName(from) + ": only f16, bf16");
  return Status::ok();
}

Status HostStepKernels::scale(const float* in, size_t count, float factor, float* out) {
  for (size_t j = 0; j < count; ++j) out[j] = in[j] * factor;
  return Status::ok();
}

Status HostStepKernels::castResidual(DataType from, const float* x, const uint16_t* h, size_t count, float* r) {
  if (from != DataType::kF16 && from != DataType::kBF16)
    return Status(Code::kInvalidArgument, std::string("cast residual of ") + dataTypeName(from) + ": only f16, bf16");
  for (size_t j = 0; j < count; ++j) r[j] = kernels::castResidualOf(x[j], h[j], from == DataType::kF16);
  return Status::ok();
}

Result<size_t> HostStepKernels::topkSelect(const float* x, size_t n, size_t k, uint32_t* indices) {
  topkScratch_.resize(std::max(topkScratch_.size(), kernels::topkScratchCount(n, k)));
  return kernels::topkSelect(x, n, k, indices, topkScratch_.data(), topkScratch_.size());
}

Result<size_t> HostStepKernels::randomkSelect(size_t n, size_t k, uint64_t seed, uint32_t step, uint32_t* indices) {
  randomkBitmap_.resize(std::max(randomkBitmap_.size(), kernels::randomkBitmapWords(n)));
  return kernels::randomkSelect(n, k, seed, step, randomkBitmap_.data(), indices);
}

Status HostStepKernels::gather(const float* x, const uint32_t* indices, size_t k, float* out) {
  kernels::gatherValues(x, indices, k, out);
  return Status::ok();
}

Status HostStepKernels::scatter(const uint32_t* indices, const float* values, size_t k, float* out) {
  kernels::scatterValues(indices, values, k, out);
  return Status::ok();
}

Result<size_t> HostStepKernels::firstIndexOutOfRange(const uint32_t* indices, size_t k, size_t n) {
  for (size_t i = 0; i < k; ++i)
    if (indices[i] >= n) return i;
  return k;
}

Status HostStepKernels::efKeep(const float* c, size_t count, float* e) {
  for (size_t j = 0; j < count; ++j) e[j] = kernels::efKept(c[j], e[j]);
  return Status::ok();
}

Status HostStepKernels::nesterovShift(const float* g, const float* m, size_t count, float mu, float* p) {
  for (size_t j = 0; j < count; ++j) p[j] = kernels::nesterovShifted(g[j], m[j], mu);
  return Status::ok();
}

Status HostStepKernels::nesterovUpdate(const float* g, size_t count, float mu, float* m) {
  for (size_t j = 0; j < count; ++j) m[j] = kernels::nesterovNext(g[j], m[j], mu);
  return Status::ok();
}

Result<size_t> HostStepKernels::signPack(const float* x, size_t count, uint64_t* words, const kernels::RngStream& rng,
                                         uint64_t firstWord) {
  return kernels::signPack(x, count, words, rng, firstWord);
}

Status HostStepKernels::sumAbs(const float* x, size_t count, double* sum) {
  *sum = kernels::sumAbs(x, count);
  return Status::ok();
}

Status HostStepKernels::signDecompress(const uint64_t* words, size_t count, float eta, float* out) {
  kernels::signDecompress(words, count, eta, out);
  return Status::ok();
}

Status HostStepKernels::maxAbs(const float* x, size_t count, float* max) {
  *max = kernels::ditherScale(x, count, kernels::DitherNormalize::kMax);
  return Status::ok();
}

Status HostStepKernels::sumSquares(const float* x, size_t count, double* sum) {
  *sum = kernels::ditherSumSquares(x, count);
  return Status::ok();
}

Status HostStepKernels::ditherQuantize(const float* x, size_t count, float scale, uint32_t levels,
                                       kernels::DitherPartition partition, const kernels::RngStream& rng,
                                       int16_t* codes) {
  kernels::ditherQuantize(x, count, scale, levels, partition, rng, codes);
  return Status::ok();
}

Status HostStepKernels::ditherDequantize(const int16_t* codes, size_t count, float scale, uint32_t levels,
                                         kernels::DitherPartition partition, float* out) {
  kernels::ditherDequantize(codes, count, scale, levels, partition, out);
  return Status::ok();
}

// tmp = (-mu) prev, prev = g, carry = mu g + comp, g = g + tmp: kernels::momentumHandOff's
// float operations in five passes.
Status StepKernels::momentumHandOff(float* g, float* prev, const float* comp, float* carry, size_t count, float mu,
                                    float* scratch) {
  TSR_RETURN_IF_ERROR(scale(prev, count, -mu, scratch));
  TSR_RETURN_IF_ERROR(copy(prev, g, count * sizeof(float)));
  TSR_RETURN_IF_ERROR(scale(g, count, mu, carry));
  TSR_RETURN_IF_ERROR(reduce(carry, comp, count, DataType::kF32, ReduceOp::kSum));
  return reduce(g, scratch, count, DataType::kF32, ReduceOp::kSum);
}

}  // namespace tsr::algorithms
