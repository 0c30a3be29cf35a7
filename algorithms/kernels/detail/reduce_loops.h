// Reduction loops written once and compiled twice: by reduce.cc for the portable path and by
// avx2.cc with -mavx2, where the compiler vectorizes the same source into 256-bit code.
// Internal linkage (anonymous namespace) keeps the two instantiations apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "base/dtype.h"
#include "base/half.h"

namespace tsr::kernels {
namespace {

template <typename T>
struct Arith {
  static T sum(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  }
  static T prod(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
      return a * b;
    }
  }
  static T min(T a, T b) { return b < a ? b : a; }
  static T max(T a, T b) { return a < b ? b : a; }
};

// src may sit at any address: a message is reduced where it landed in the transport's
// receive buffer (reduce on arrival), behind headers of odd lengths. Loaded through memcpy,
// which the compiler turns into plain (unaligned) loads, vectorized as before.
template <typename T, typename F>
void binaryLoop(T* __restrict dst, const void* __restrict src, size_t n, F f) {
  const auto* bytes = static_cast<const unsigned char*>(src);
  for (size_t i = 0; i < n; ++i) {
    T s;
    std::memcpy(&s, bytes + i * sizeof(T), sizeof(T));
    dst[i] = f(dst[i], s);
  }
}

template <typename T>
void reduceTyped(T* __restrict dst, const void* __restrict src, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      binaryLoop(dst, src, n, [](T a, T b) { return Arith<T>::sum(a, b); });
      return;
    case ReduceOp::kProd:
      binaryLoop(dst, src, n, [](T a, T b) { return Arith<T>::prod(a, b); });
      return;
    case ReduceOp::kMin:
      binaryLoop(dst, src, n, [](T a, T b) { return Arith<T>::min(a, b); });
      return;
    case ReduceOp::kMax:
      binaryLoop(dst, src, n, [](T a, T b) { return Arith<T>::max(a, b); });
      return;
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      // Integers only; the callers refuse the others (Communicator::checkArgs).
      if constexpr (std::is_integral_v<T>) {
        if (op == ReduceOp::kBand)
          binaryLoop(dst, src, n, [](T a, T b) { return static_cast<T>(a & b); });
        else if (op == ReduceOp::kBor)
          binaryLoop(dst, src, n, [](T a, T b) { return static_cast<T>(a | b); });
        else
          binaryLoop(dst, src, n, [](T a, T b) { return static_cast<T>(a ^ b); });
      }
      return;
  }
}

template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void reduceHalf(uint16_t* __restrict dst, const void* __restrict src, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      binaryLoop(dst, src, n, [](uint16_t a, uint16_t b) { return FromF(ToF(a) + ToF(b)); });
      return;
    case ReduceOp::kProd:
      binaryLoop(dst, src, n, [](uint16_t a, uint16_t b) { return FromF(ToF(a) * ToF(b)); });
      return;
    case ReduceOp::kMin:
      binaryLoop(dst, src, n, [](uint16_t a, uint16_t b) { return FromF(Arith<float>::min(ToF(a), ToF(b))); });
      return;
    case ReduceOp::kMax:
      binaryLoop(dst, src, n, [](uint16_t a, uint16_t b) { return FromF(Arith<float>::max(ToF(a), ToF(b))); });
      return;
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor:
      return;  // integers only: refused before any plan runs
  }
}

inline void reduceLoop(void* dst, const void* src, size_t n, DataType dtype, ReduceOp op) {
  switch (dtype) {
    case DataType::kF32:
      reduceTyped(static_cast<float*>(dst), src, n, op);
      return;
    case DataType::kF64:
      reduceTyped(static_cast<double*>(dst), src, n, op);
      return;
    case DataType::kI32:
      reduceTyped(static_cast<int32_t*>(dst), src, n, op);
      return;
    case DataType::kI64:
      reduceTyped(static_cast<int64_t*>(dst), src, n, op);
      return;
    case DataType::kF16:
      reduceHalf<f16ToFloat, floatToF16>(static_cast<uint16_t*>(dst), src, n, op);
      return;
    case DataType::kBF16:
      reduceHalf<bf16ToFloat, floatToBf16>(static_cast<uint16_t*>(dst), src, n, op);
      return;
  }
}

}  // namespace
}  // namespace tsr::kernels
