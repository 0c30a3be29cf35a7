// Reference values for checking collectives (tests, tsr-check, tsr-bench): write a double into
// any dtype and read it back, inputs whose reductions are exact or nearly so in every dtype,
// their float64 reference, and a comparison at the precision of the dtype.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/dtype.h"
#include "base/half.h"

namespace tsr::reference {

// Every dtype and every reduction, for tests that sweep them all.
inline constexpr DataType kAllTypes[] = {DataType::kF32,  DataType::kF64, DataType::kF16,
                                         DataType::kBF16, DataType::kI32, DataType::kI64};
inline constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProd};
// The bitwise reductions, which the integer dtypes take besides kAllOps.
inline constexpr ReduceOp kBitwiseOps[] = {ReduceOp::kBand, ReduceOp::kBor, ReduceOp::kBxor};

// The reductions dtype t takes: kAllOps, and for an integer the bitwise ones too.
inline std::vector<ReduceOp> opsFor(DataType t) {
  std::vector<ReduceOp> ops;
  for (ReduceOp op : kAllOps) ops.push_back(op);
  if (!isFloatType(t))
    for (ReduceOp op : kBitwiseOps) ops.push_back(op);
  return ops;
}

inline void storeValue(void* base, size_t i, DataType t, double v) {
  switch (t) {
    case DataType::kF32:
      static_cast<float*>(base)[i] = static_cast<float>(v);
      break;
    case DataType::kF64:
      static_cast<double*>(base)[i] = v;
      break;
    case DataType::kF16:
      static_cast<uint16_t*>(base)[i] = floatToF16(static_cast<float>(v));
      break;
    case DataType::kBF16:
      static_cast<uint16_t*>(base)[i] = floatToBf16(static_cast<float>(v));
      break;
    case DataType::kI32:
      static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v);
      break;
    case DataType::kI64:
      static_cast<int64_t*>(base)[i] = static_cast<int64_t>(v);
      break;
  }
}

inline double loadValue(const void* base, size_t i, DataType t) {
  switch (t) {
    case DataType::kF32:
      return static_cast<const float*>(base)[i];
    case DataType::kF64:
      return static_cast<const double*>(base)[i];
    case DataType::kF16:
      return f16ToFloat(static_cast<const uint16_t*>(base)[i]);
    case DataType::kBF16:
      return bf16ToFloat(static_cast<const uint16_t*>(base)[i]);
    case DataType::kI32:
      return static_cast<const int32_t*>(base)[i];
    case DataType::kI64:
      return static_cast<double>(static_cast<const int64_t*>(base)[i]);
  }
  return 0;
}

// Inputs chosen so that every reduction is exact or nearly so in every dtype: small
// integers, and only 1s and 2s for prod (2^16 fits all types); for the bitwise ops (integer
// dtypes) int32 patterns of every bit, negative ones included.
inline double inputValue(int rank, size_t j, ReduceOp op) {
  if (op == ReduceOp::kProd) return 1.0 + static_cast<double>((j + rank) % 2);
  if (isBitwiseOp(op)) {
    const uint32_t bits = (static_cast<uint32_t>(rank) + 1) * 0x2545F491u ^ static_cast<uint32_t>(j) * 0x9E3779B9u;
    return static_cast<double>(static_cast<int32_t>(bits));
  }
  return static_cast<double>((rank + 1) + static_cast<int>(j % 7)) - 3.0;
}

// One step of a reduction in float64 (kAvg sums; the caller divides).
inline double combine(ReduceOp op, double acc, double v) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return acc + v;
    case ReduceOp::kMin:
      return std::min(acc, v);
    case ReduceOp::kMax:
      return std::max(acc, v);
    case ReduceOp::kProd:
      return acc * v;
    case ReduceOp::kBand:
      return static_cast<double>(static_cast<int64_t>(acc) & static_cast<int64_t>(v));
    case ReduceOp::kBor:
      return static_cast<double>(static_cast<int64_t>(acc) | static_cast<int64_t>(v));
    case ReduceOp::kBxor:
      return static_cast<double>(static_cast<int64_t>(acc) ^ static_cast<int64_t>(v));
  }
  return acc;
}

inline double reduceReference(int size, size_t j, ReduceOp op, DataType t) {
  double acc = inputValue(0, j, op);
  for (int r = 1; r < size; ++r) acc = combine(op, acc, inputValue(r, j, op));
  if (op == ReduceOp::kAvg) {
    if (isFloatType(t))
      acc /= size;
    else
      acc = std::trunc(acc / size);
  }
  return acc;
}

inline double tolerance(DataType t) {
  switch (t) {
    case DataType::kF16:
      return 2e-3;
    case DataType::kBF16:
      return 1e-2;
    case DataType::kF32:
      return 1e-6;
    default:
      return 0;
  }
}

inline bool closeEnough(double got, double want, DataType t) {
  return std::fabs(got - want) <= tolerance(t) * std::max(1.0, std::fabs(want));
}

}  // namespace tsr::reference
