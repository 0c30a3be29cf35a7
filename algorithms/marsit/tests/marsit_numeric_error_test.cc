// The NaN/Inf count of a Marsit step comes from every rank's scalar: a peer that sends a huge
// or non-finite value there gets a message naming it, not an out-of-range conversion (found by
// fuzz/marsit_fuzzer.cc: a scalar of 1e300 from the peer).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "algorithms/marsit/marsit_step.h"

namespace tsr::marsit {
namespace {

TEST(MarsitNumericError, CountsRanksAndNamesAMalformedCount) {
  MarsitState s;
  s.name = "t";
  s.size = 4;
  s.scalarOut = {0.5, 2.0};
  Status two = numericError(s, SIZE_MAX, 0.0f);
  EXPECT_EQ(two.code(), Code::kNumericError);
  EXPECT_NE(two.message().find("2 rank(s) had NaN or Inf"), std::string::npos) << two.message();
  for (double forged : {1e300, std::numeric_limits<double>::infinity(), 7.0, 0.5}) {
    s.scalarOut.back() = forged;
    Status st = numericError(s, SIZE_MAX, 0.0f);
    EXPECT_EQ(st.code(), Code::kNumericError);
    EXPECT_NE(st.message().find("malformed"), std::string::npos) << forged << ": " << st.message();
  }
}

}  // namespace
}  // namespace tsr::marsit
