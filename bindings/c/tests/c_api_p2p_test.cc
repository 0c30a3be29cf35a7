// tsr_send / tsr_recv, tsr_comm_set_timeout and tsr_comm_finalize as a C user sees them:
// ranks as threads over real UCX.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "bindings/c/tests/c_ranks.h"
#include "tessera/tessera.h"

using tsr::ctest::lastError;
using tsr::ctest::runCRanks;

namespace {

float valueOf(int from, int message, size_t i) { return static_cast<float>(from * 1000 + message * 100) + i; }

// Each rank sends to the next one around a ring and receives from the one before, in both
// orders of posting; large messages (UCX's rendezvous) and small ones, two tags whose
// receives are posted in the other order than the sends, collectives in between.
TEST(CApiPointToPoint, RingOfMessagesInOrderPerTag) {
  const int n = 4;
  runCRanks(n, [n](tsr_comm_t comm, int r) {
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    const size_t big = size_t{1} << 20, small = 5;
    std::vector<float> out0(big), out1(small), out2(small);
    for (size_t i = 0; i < big; ++i) out0[i] = valueOf(r, 0, i);
    for (size_t i = 0; i < small; ++i) out1[i] = valueOf(r, 1, i), out2[i] = valueOf(r, 2, i);
    std::vector<float> in0(big, -1), in1(small, -1), in2(small, -1);
    tsr_request_t reqs[6] = {};
    // Tag 7 carries messages 1 then 2; tag 0 message 0. The receives go tag 7 first.
    ASSERT_EQ(tsr_recv(comm, in1.data(), small, TSR_FLOAT32, prev, 7, &reqs[0]), TSR_OK) << lastError();
    ASSERT_EQ(tsr_recv(comm, in2.data(), small, TSR_FLOAT32, prev, 7, &reqs[1]), TSR_OK) << lastError();
    ASSERT_EQ(tsr_send(comm, out0.data(), big, TSR_FLOAT32, next, 0, &reqs[2]), TSR_OK) << lastError();
    ASSERT_EQ(tsr_send(comm, out1.data(), small, TSR_FLOAT32, next, 7, &reqs[3]), TSR_OK) << lastError();
    // A collective between: it does not wait for the messages, nor they for it.
    int64_t one = 1, total = 0;
    ASSERT_EQ(tsr_allreduce(comm, &one, &total, 1, TSR_INT64, TSR_SUM, nullptr), TSR_OK) << lastError();
    EXPECT_EQ(total, n);
    ASSERT_EQ(tsr_send(comm, out2.data(), small, TSR_FLOAT32, next, 7, &reqs[4]), TSR_OK) << lastError();
    ASSERT_EQ(tsr_recv(comm, in0.data(), big, TSR_FLOAT32, prev, 0, &reqs[5]), TSR_OK) << lastError();
    for (auto* req : reqs) {
      ASSERT_EQ(tsr_wait(req), TSR_OK) << lastError();
      ASSERT_EQ(tsr_request_free(req), TSR_OK);
    }
    for (size_t i = 0; i < big; i += 4099) ASSERT_EQ(in0[i], valueOf(prev, 0, i)) << "at " << i;
    EXPECT_EQ(in0[big - 1], valueOf(prev, 0, big - 1));
    for (size_t i = 0; i < small; ++i) {
      EXPECT_EQ(in1[i], valueOf(prev, 1, i)) << "tag 7's first message, at " << i;
      EXPECT_EQ(in2[i], valueOf(prev, 2, i)) << "tag 7's second message, at " << i;
    }
    // Blocking forms, the other way around the ring.
    double mine = r, theirs = -1;
    if (r % 2 == 0) {
      ASSERT_EQ(tsr_send(comm, &mine, 1, TSR_FLOAT64, prev, 3, nullptr), TSR_OK) << lastError();
      ASSERT_EQ(tsr_recv(comm, &theirs, 1, TSR_FLOAT64, next, 3, nullptr), TSR_OK) << lastError();
    } else {
      ASSERT_EQ(tsr_recv(comm, &theirs, 1, TSR_FLOAT64, next, 3, nullptr), TSR_OK) << lastError();
      ASSERT_EQ(tsr_send(comm, &mine, 1, TSR_FLOAT64, prev, 3, nullptr), TSR_OK) << lastError();
    }
    EXPECT_EQ(theirs, next);
  });
}

TEST(CApiPointToPoint, BadArgumentsAreNamedBeforeAnythingIsSent) {
  runCRanks(2, [](tsr_comm_t comm, int r) {
    float x[2] = {0, 0};
    EXPECT_EQ(tsr_send(comm, x, 2, TSR_FLOAT32, 2, 0, nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("peer 2 is not a rank of this communicator (0..1)"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_recv(comm, x, 2, TSR_FLOAT32, r, 0, nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("is this rank itself"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_send(comm, x, 2, TSR_FLOAT32, 1 - r, -1, nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("tag -1 is negative"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_send(comm, x, 2, TSR_FLOAT32, 1 - r, TSR_MAX_TAG + 1, nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("tag 1048576 is over the largest"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_recv(comm, nullptr, 2, TSR_FLOAT32, 1 - r, 0, nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("recv on rank " + std::to_string(r) + ": the output buffer is NULL with count 2"),
              std::string::npos)
        << lastError();
    // Nothing was sent: the pair still talks.
    float theirs = -1, mine = static_cast<float>(r);
    tsr_request_t req = nullptr;
    ASSERT_EQ(tsr_recv(comm, &theirs, 1, TSR_FLOAT32, 1 - r, 0, &req), TSR_OK) << lastError();
    ASSERT_EQ(tsr_send(comm, &mine, 1, TSR_FLOAT32, 1 - r, 0, nullptr), TSR_OK) << lastError();
    ASSERT_EQ(tsr_wait(req), TSR_OK) << lastError();
    tsr_request_free(req);
    EXPECT_EQ(theirs, static_cast<float>(1 - r));
  });
}

// Rank 1 sends 3 floats where rank 0 expects 4 (and rank 2 takes no part): the receiver names
// both sizes, and every rank's communicator is broken from then on, as after a mismatched
// collective.
TEST(CApiPointToPoint, ASizeMismatchIsNamedAndBreaksEveryRank) {
  runCRanks(3, [](tsr_comm_t comm, int r) {
    float x[4] = {1, 2, 3, 4};
    if (r == 0) {
      EXPECT_EQ(tsr_recv(comm, x, 4, TSR_FLOAT32, 1, 0, nullptr), TSR_ERR_MISMATCH);
      EXPECT_NE(lastError().find("rank 0: recv of 4 f32 from rank 1 (tag 0, message 0): rank 1 sent 12 bytes "
                                 "where 16 were expected"),
                std::string::npos)
          << lastError();
    } else if (r == 1) {
      EXPECT_EQ(tsr_send(comm, x, 3, TSR_FLOAT32, 0, 0, nullptr), TSR_OK) << lastError();
    }
    EXPECT_NE(tsr_barrier(comm, nullptr), TSR_OK) << "rank " << r << " went on after the mismatch";
    EXPECT_NE(lastError().find("sent 12 bytes where 16 were expected"), std::string::npos)
        << "rank " << r << ": " << lastError();
  });
}

// A receive that nothing answers fails at the communicator's per-call timeout, set after
// creation, naming the call and the peer; the peer hears of it.
TEST(CApiPointToPoint, TimeoutSetLaterBoundsAReceiveThatNothingAnswers) {
  runCRanks(2, [](tsr_comm_t comm, int r) {
    EXPECT_EQ(tsr_comm_set_timeout(comm, 0), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("timeout 0 ms"), std::string::npos) << lastError();
    // Rank 1's own timeout is longer: it is told by rank 0's notice.
    ASSERT_EQ(tsr_comm_set_timeout(comm, r == 0 ? 300 : 60000), TSR_OK) << lastError();
    int now = 0;
    ASSERT_EQ(tsr_comm_timeout(comm, &now), TSR_OK) << lastError();
    EXPECT_EQ(now, r == 0 ? 300 : 60000);
    if (r == 0) {
      double x = 0;
      auto start = std::chrono::steady_clock::now();
      EXPECT_EQ(tsr_recv(comm, &x, 1, TSR_FLOAT64, 1, 4, nullptr), TSR_ERR_TIMEOUT);
      EXPECT_NE(lastError().find("recv of 1 f64 from rank 1 (tag 4, message 0) timed out after 300 ms"),
                std::string::npos)
          << lastError();
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
    }
    // Rank 1's barrier waits for rank 0, which fails it with the timeout's notice.
    EXPECT_NE(tsr_barrier(comm, nullptr), TSR_OK);
    EXPECT_NE(lastError().find("from rank 1 (tag 4, message 0) timed out after 300 ms"), std::string::npos)
        << "rank " << r << ": " << lastError();
  });
}

// tsr_comm_finalize waits for what is in flight, then ends the communicator; the handle stays
// valid (calls on it say the communicator is gone) until tsr_comm_destroy.
TEST(CApiPointToPoint, FinalizeWaitsForPendingWorkAndKeepsTheHandle) {
  runCRanks(3, [](tsr_comm_t comm, int r) {
    std::vector<float> data(1 << 18, 1.0f);
    tsr_request_t req = nullptr;
    ASSERT_EQ(tsr_allreduce(comm, data.data(), data.data(), data.size(), TSR_FLOAT32, TSR_SUM, &req), TSR_OK)
        << lastError();
    ASSERT_EQ(tsr_comm_finalize(comm), TSR_OK) << lastError();
    EXPECT_EQ(tsr_test(req), TSR_OK) << lastError();
    EXPECT_EQ(data.back(), 3.0f) << "rank " << r;
    tsr_request_free(req);
    EXPECT_EQ(tsr_barrier(comm, nullptr), TSR_ERR_ABORTED);
    EXPECT_NE(lastError().find("tsr_barrier"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_comm_finalize(comm), TSR_ERR_ABORTED);  // once only; destroy still frees it
  });
}

}  // namespace
