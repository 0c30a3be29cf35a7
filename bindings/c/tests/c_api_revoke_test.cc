// tsr_comm_revoke as a C user sees it (ranks as threads over real UCX): the peers' pending
// calls, a collective and a receive that nothing would answer, fail at once with
// TSR_ERR_REVOKED naming the rank that revoked, and every later call on every rank too.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "bindings/c/tests/c_ranks.h"
#include "tessera/tessera.h"

using tsr::ctest::lastError;
using tsr::ctest::runCRanks;

namespace {

TEST(CApiRevoke, PendingAndLaterCallsFailWithRevokedOnEveryRank) {
  runCRanks(3, [](tsr_comm_t comm, int r) {
    float x[4] = {1, 2, 3, 4};
    const auto start = std::chrono::steady_clock::now();
    if (r == 0) {
      EXPECT_EQ(tsr_comm_revoke(comm), TSR_OK) << lastError();
    } else {
      // Pending when the notice comes: rank 0 never joins this allreduce, nor sends to rank 2.
      tsr_request_t reduce = nullptr, receive = nullptr;
      ASSERT_EQ(tsr_allreduce(comm, x, x, 4, TSR_FLOAT32, TSR_SUM, &reduce), TSR_OK) << lastError();
      if (r == 2) {
        ASSERT_EQ(tsr_recv(comm, x, 4, TSR_FLOAT32, 0, 0, &receive), TSR_OK) << lastError();
      }
      EXPECT_EQ(tsr_wait(reduce), TSR_ERR_REVOKED) << lastError();
      EXPECT_NE(lastError().find("rank 0 revoked the communicator"), std::string::npos) << lastError();
      tsr_request_free(reduce);
      if (receive) {
        EXPECT_EQ(tsr_wait(receive), TSR_ERR_REVOKED) << lastError();
        tsr_request_free(receive);
      }
    }
    // Well within the 300 s default timeout: the notice, not a timeout, ended them.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
    EXPECT_EQ(tsr_barrier(comm, nullptr), TSR_ERR_REVOKED) << "rank " << r << ": " << lastError();
    EXPECT_NE(lastError().find("rank 0 revoked the communicator"), std::string::npos) << lastError();
    EXPECT_STREQ(tsr_status_string(TSR_ERR_REVOKED), "TSR_ERR_REVOKED");
  });
}

}  // namespace
