// Dense element-wise reduction kernels: the local math of every dense allreduce step.
//
// reduceInto(dst, src): dst[i] = op(dst[i], src[i]) for i < count.
//   f32/f64: IEEE arithmetic; min/max are `b < a ? b : a` / `a < b ? b : a` with a = dst[i]
//   (so a NaN in dst is kept, a NaN in src is dropped by min/max and propagated by sum/prod).
//   f16/bf16: computed in float, rounded back to nearest even (base/half.h).
//   i32/i64: two's-complement wrap-around on overflow (no UB).
//   avg reduces exactly like sum; finish with divideInPlace(count of contributions).
// dst and src must not overlap. Results are identical on the portable and AVX2 paths.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/dtype.h"

namespace tsr::kernels {

void reduceInto(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op);

// data[i] *= factor. Floats: computed in the element type's arithmetic (f32 in float, f16/bf16
// through float, f64 in double). Integers: truncated toward zero after multiplying in double.
void scaleInPlace(void* data, size_t count, DataType dtype, double factor);

// data[i] /= divisor: finishes an average. Floats divide (correctly rounded, no reciprocal);
// integers use C++ division, i.e. toward zero. divisor must be > 0.
void divideInPlace(void* data, size_t count, DataType dtype, uint64_t divisor);

}  // namespace tsr::kernels
