// tsr_alltoallv as a C user sees it: uneven blocks (zero-sized ones too) between ranks as
// threads over real UCX, blocking and not, and a pair that disagrees on a count named on
// every rank before any data moves.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "bindings/c/tests/c_ranks.h"
#include "tessera/tessera.h"

using tsr::ctest::lastError;
using tsr::ctest::runCRanks;

namespace {

size_t blockSize(int from, int to) { return static_cast<size_t>((from + 2 * to) % 4); }  // 0..3, zeros included

std::vector<size_t> offsets(const std::vector<size_t>& counts) {
  std::vector<size_t> displs(counts.size(), 0);
  std::partial_sum(counts.begin(), counts.end() - 1, displs.begin() + 1);
  return displs;
}

void unevenBlocks(int n, bool blocking) {
  runCRanks(n, [n, blocking](tsr_comm_t comm, int r) {
    std::vector<size_t> sendCounts(n), recvCounts(n);
    for (int p = 0; p < n; ++p) {
      sendCounts[p] = blockSize(r, p);
      recvCounts[p] = blockSize(p, r);
    }
    auto sendDispls = offsets(sendCounts), recvDispls = offsets(recvCounts);
    std::vector<int32_t> in(sendDispls[n - 1] + sendCounts[n - 1] + 1),
        out(recvDispls[n - 1] + recvCounts[n - 1] + 1, -1);
    for (int p = 0; p < n; ++p)
      for (size_t j = 0; j < sendCounts[p]; ++j) in[sendDispls[p] + j] = r * 1000 + p * 10 + static_cast<int>(j);
    tsr_request_t req = nullptr;
    ASSERT_EQ(tsr_alltoallv(comm, in.data(), sendCounts.data(), sendDispls.data(), out.data(), recvCounts.data(),
                            recvDispls.data(), TSR_INT32, blocking ? nullptr : &req),
              TSR_OK)
        << lastError();
    if (!blocking) {
      ASSERT_EQ(tsr_wait(req), TSR_OK) << lastError();
      ASSERT_EQ(tsr_request_free(req), TSR_OK);
    }
    for (int p = 0; p < n; ++p)
      for (size_t j = 0; j < recvCounts[p]; ++j)
        EXPECT_EQ(out[recvDispls[p] + j], p * 1000 + r * 10 + static_cast<int>(j)) << "from rank " << p << " at " << j;
    EXPECT_EQ(out.back(), -1) << "written past the last block";
    // The communicator goes on.
    int64_t one = 1, total = 0;
    ASSERT_EQ(tsr_allreduce(comm, &one, &total, 1, TSR_INT64, TSR_SUM, nullptr), TSR_OK) << lastError();
    EXPECT_EQ(total, n);
  });
}

TEST(CApiAlltoall, UnevenBlocksOverFourRanks) { unevenBlocks(4, true); }
TEST(CApiAlltoall, UnevenBlocksOverThreeRanksNonBlocking) { unevenBlocks(3, false); }

TEST(CApiAlltoall, OneRankCopiesItsOwnBlockAndNothingIsFine) {
  runCRanks(1, [](tsr_comm_t comm, int) {
    size_t count = 3, zero = 0, none = 0;
    double in[3] = {1, 2, 3}, out[3] = {0, 0, 0};
    ASSERT_EQ(tsr_alltoallv(comm, in, &count, &zero, out, &count, &zero, TSR_FLOAT64, nullptr), TSR_OK) << lastError();
    EXPECT_EQ(out[2], 3.0);
    ASSERT_EQ(tsr_alltoallv(comm, nullptr, &none, &zero, nullptr, &none, &zero, TSR_FLOAT64, nullptr), TSR_OK)
        << lastError();
  });
}

// Rank 0 expects 2 elements from rank 1, which sends it 1: every rank is told, naming both.
TEST(CApiAlltoall, APairThatDisagreesIsNamedOnEveryRank) {
  runCRanks(3, [](tsr_comm_t comm, int r) {
    std::vector<size_t> counts(3, 1), displs{0, 1, 2};
    std::vector<size_t> recv = counts, recvDispls = displs;
    if (r == 0) recv[1] = 2, recvDispls = {0, 1, 3};
    std::vector<float> in(3, 1.0f), out(4, 0.0f);
    EXPECT_EQ(tsr_alltoallv(comm, in.data(), counts.data(), displs.data(), out.data(), recv.data(), recvDispls.data(),
                            TSR_FLOAT32, nullptr),
              TSR_ERR_MISMATCH);
    EXPECT_NE(lastError().find("rank 1 sends 1 elements to rank 0, which expects 2"), std::string::npos) << lastError();
    EXPECT_EQ(out[0], 0.0f) << "data moved despite the mismatch";
  });
}

TEST(CApiAlltoall, BadArgumentsAreNamed) {
  runCRanks(2, [](tsr_comm_t comm, int) {
    size_t counts[2] = {1, 1}, displs[2] = {0, 1};
    float buf[2] = {0, 0};
    EXPECT_EQ(tsr_alltoallv(comm, buf, nullptr, displs, buf, counts, displs, TSR_FLOAT32, nullptr),
              TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("NULL"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_alltoallv(comm, nullptr, counts, displs, buf, counts, displs, TSR_FLOAT32, nullptr),
              TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("input is NULL with 1 elements for rank 0"), std::string::npos) << lastError();
    float in[2] = {1, 2}, out[4] = {0};
    size_t far[2] = {0, SIZE_MAX / 2}, same[2] = {0, 0};
    EXPECT_EQ(tsr_alltoallv(comm, in, counts, far, out, counts, displs, TSR_FLOAT32, nullptr),
              TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("displacement for rank 1 is too large"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_alltoallv(comm, in, counts, displs, out, counts, same, TSR_FLOAT32, nullptr),
              TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("output blocks from ranks 0 and 1 overlap"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_alltoallv(comm, in, counts, displs, in, counts, displs, TSR_FLOAT32, nullptr),
              TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("overlaps the input"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_alltoallv(comm, in, counts, displs, out, counts, displs, static_cast<tsr_dtype_t>(260), nullptr),
              TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("dtype 260"), std::string::npos) << lastError();
    // Refused locally: the communicator goes on.
    ASSERT_EQ(tsr_alltoallv(comm, in, counts, displs, out, counts, displs, TSR_FLOAT32, nullptr), TSR_OK)
        << lastError();
  });
}

}  // namespace
