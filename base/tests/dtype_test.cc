#include "base/dtype.h"
#include "base/status.h"

#include <gtest/gtest.h>

namespace tsr {
namespace {

TEST(DataType, NamesRoundTrip) {
  for (int i = 0; i < kNumDataTypes; ++i) {
    auto t = static_cast<DataType>(i);
    EXPECT_EQ(parseDataType(dataTypeName(t)), t);
  }
  for (int i = 0; i < kNumReduceOps; ++i) {
    auto op = static_cast<ReduceOp>(i);
    EXPECT_EQ(parseReduceOp(reduceOpName(op)), op);
  }
  EXPECT_FALSE(parseDataType("f8").has_value());
  EXPECT_FALSE(parseReduceOp("xor").has_value());
  EXPECT_EQ(dataTypeSize(DataType::kBF16), 2u);
}

TEST(Status, InProgressAndNotSupportedAreNotErrors) {
  EXPECT_FALSE(Status(Code::kInProgress, "").isError());
  EXPECT_FALSE(Status(Code::kNotSupported, "").isError());
  EXPECT_TRUE(Status(Code::kTimeout, "rank 1").isError());
  EXPECT_EQ(Status(Code::kMismatch, "count").toString(), "TSR_ERR_MISMATCH: count");
}

}  // namespace
}  // namespace tsr
