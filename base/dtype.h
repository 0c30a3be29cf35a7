// Element types and reduction operators shared by every layer and the C API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tsr {

// Values match tsr_dtype_t in the C API.
enum class DataType : uint8_t { kF32 = 0, kF64 = 1, kF16 = 2, kBF16 = 3, kI32 = 4, kI64 = 5 };
inline constexpr int kNumDataTypes = 6;

// Values match tsr_op_t in the C API. The bitwise ones (and, or, xor; as MPI_BAND, gloo's
// BAND) take the integer dtypes only.
enum class ReduceOp : uint8_t { kSum = 0, kAvg = 1, kMin = 2, kMax = 3, kProd = 4, kBand = 5, kBor = 6, kBxor = 7 };
inline constexpr int kNumReduceOps = 8;
inline constexpr int kNumArithmeticOps = 5;  // sum .. prod: every dtype takes them

constexpr size_t dataTypeSize(DataType t) {
  switch (t) {
    case DataType::kF32:
      return 4;
    case DataType::kF64:
      return 8;
    case DataType::kF16:
      return 2;
    case DataType::kBF16:
      return 2;
    case DataType::kI32:
      return 4;
    case DataType::kI64:
      return 8;
  }
  return 0;
}

constexpr bool isFloatType(DataType t) {
  return t == DataType::kF32 || t == DataType::kF64 || t == DataType::kF16 || t == DataType::kBF16;
}

constexpr bool isBitwiseOp(ReduceOp op) {
  return op == ReduceOp::kBand || op == ReduceOp::kBor || op == ReduceOp::kBxor;
}

const char* dataTypeName(DataType t);   // "f32", ...
const char* reduceOpName(ReduceOp op);  // "sum", ...
std::optional<DataType> parseDataType(std::string_view name);
std::optional<ReduceOp> parseReduceOp(std::string_view name);
bool isValidDataType(int value);
bool isValidReduceOp(int value);

}  // namespace tsr
