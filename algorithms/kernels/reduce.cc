#include "algorithms/kernels/reduce.h"

#include <cmath>

#include "algorithms/kernels/detail/avx2.h"
#include "algorithms/kernels/detail/reduce_loops.h"
#include "algorithms/kernels/isa.h"

namespace tsr::kernels {

void reduceInto(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op) {
  if (count == 0) return;
  if (activeIsa() == Isa::kAvx2) {
    // f16 through float needs F16C to vectorize (the portable conversions are 14x slower).
    if (dtype == DataType::kF16 && cpuHasF16c()) return avx2::reduceF16(static_cast<uint16_t*>(dst), src, count, op);
    avx2::reduceInto(dst, src, count, dtype, op);
    return;
  }
  reduceLoop(dst, src, count, dtype, op);
}

namespace {

template <typename T, typename F>
void unaryLoop(T* __restrict data, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) data[i] = f(data[i]);
}

}  // namespace

void scaleInPlace(void* data, size_t count, DataType dtype, double factor) {
  switch (dtype) {
    case DataType::kF32: {
      float f = static_cast<float>(factor);
      unaryLoop(static_cast<float*>(data), count, [f](float x) { return x * f; });
      return;
    }
    case DataType::kF64:
      unaryLoop(static_cast<double*>(data), count, [factor](double x) { return x * factor; });
      return;
    case DataType::kF16: {
      float f = static_cast<float>(factor);
      unaryLoop(static_cast<uint16_t*>(data), count, [f](uint16_t x) { return floatToF16(f16ToFloat(x) * f); });
      return;
    }
    case DataType::kBF16: {
      float f = static_cast<float>(factor);
      unaryLoop(static_cast<uint16_t*>(data), count, [f](uint16_t x) { return floatToBf16(bf16ToFloat(x) * f); });
      return;
    }
    case DataType::kI32:
      unaryLoop(static_cast<int32_t*>(data), count,
                [factor](int32_t x) { return static_cast<int32_t>(std::trunc(static_cast<double>(x) * factor)); });
      return;
    case DataType::kI64:
      unaryLoop(static_cast<int64_t*>(data), count,
                [factor](int64_t x) { return static_cast<int64_t>(std::trunc(static_cast<double>(x) * factor)); });
      return;
  }
}

void divideInPlace(void* data, size_t count, DataType dtype, uint64_t divisor) {
  if (divisor <= 1) return;
  switch (dtype) {
    case DataType::kF32: {
      float d = static_cast<float>(divisor);
      unaryLoop(static_cast<float*>(data), count, [d](float x) { return x / d; });
      return;
    }
    case DataType::kF64: {
      double d = static_cast<double>(divisor);
      unaryLoop(static_cast<double*>(data), count, [d](double x) { return x / d; });
      return;
    }
    case DataType::kF16: {
      float d = static_cast<float>(divisor);
      if (activeIsa() == Isa::kAvx2 && cpuHasF16c()) return avx2::divideF16(static_cast<uint16_t*>(data), count, d);
      unaryLoop(static_cast<uint16_t*>(data), count, [d](uint16_t x) { return floatToF16(f16ToFloat(x) / d); });
      return;
    }
    case DataType::kBF16: {
      float d = static_cast<float>(divisor);
      unaryLoop(static_cast<uint16_t*>(data), count, [d](uint16_t x) { return floatToBf16(bf16ToFloat(x) / d); });
      return;
    }
    case DataType::kI32: {
      int64_t d = static_cast<int64_t>(divisor);
      unaryLoop(static_cast<int32_t*>(data), count, [d](int32_t x) { return static_cast<int32_t>(x / d); });
      return;
    }
    case DataType::kI64: {
      // Divisors above INT64_MAX leave only 0 (or -1 / 1 for extreme values): use unsigned math.
      unaryLoop(static_cast<int64_t*>(data), count, [divisor](int64_t x) {
        uint64_t mag = x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
        uint64_t q = mag / divisor;
        return x < 0 ? static_cast<int64_t>(0 - q) : static_cast<int64_t>(q);
      });
      return;
    }
  }
}

}  // namespace tsr::kernels
