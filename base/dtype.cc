#include "base/dtype.h"

namespace tsr {

namespace {
constexpr const char* kTypeNames[kNumDataTypes] = {"f32", "f64", "f16", "bf16", "i32", "i64"};
constexpr const char* kOpNames[kNumReduceOps] = {"sum", "avg", "min", "max", "prod", "band", "bor", "bxor"};
}  // namespace

const char* dataTypeName(DataType t) {
  auto i = static_cast<int>(t);
  return i >= 0 && i < kNumDataTypes ? kTypeNames[i] : "invalid-dtype";
}

const char* reduceOpName(ReduceOp op) {
  auto i = static_cast<int>(op);
  return i >= 0 && i < kNumReduceOps ? kOpNames[i] : "invalid-op";
}

std::optional<DataType> parseDataType(std::string_view name) {
  for (int i = 0; i < kNumDataTypes; ++i)
    if (name == kTypeNames[i]) return static_cast<DataType>(i);
  if (name == "float" || name == "float32") return DataType::kF32;
  if (name == "double" || name == "float64") return DataType::kF64;
  if (name == "half" || name == "float16") return DataType::kF16;
  if (name == "bfloat16") return DataType::kBF16;
  if (name == "int32") return DataType::kI32;
  if (name == "int64") return DataType::kI64;
  return std::nullopt;
}

std::optional<ReduceOp> parseReduceOp(std::string_view name) {
  for (int i = 0; i < kNumReduceOps; ++i)
    if (name == kOpNames[i]) return static_cast<ReduceOp>(i);
  return std::nullopt;
}

bool isValidDataType(int value) { return value >= 0 && value < kNumDataTypes; }
bool isValidReduceOp(int value) { return value >= 0 && value < kNumReduceOps; }

}  // namespace tsr
