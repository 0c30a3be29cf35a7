// tsr_comm_split as a C user sees it: ranks as threads over real UCX split their communicator
// by color and key (as MPI_Comm_split), run collectives on the parts and on the parent side by
// side, and get named errors for what is wrong; a tensor moves from one to another.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bindings/c/tests/c_ranks.h"
#include "tessera/tessera.h"

using tsr::ctest::lastError;
using tsr::ctest::runCRanks;

namespace {

int64_t summed(tsr_comm_t comm, int64_t value) {
  int64_t out = -1;
  EXPECT_EQ(tsr_allreduce(comm, &value, &out, 1, TSR_INT64, TSR_SUM, nullptr), TSR_OK) << lastError();
  return out;
}

// 5 ranks (not a power of two): evens and odds, ranked by key = -rank (reverse order).
TEST(CApiSplit, EvenAndOddRanksGetCommunicatorsRankedByKey) {
  runCRanks(5, [](tsr_comm_t comm, int r) {
    tsr_comm_t part = nullptr;
    ASSERT_EQ(tsr_comm_split(comm, r % 2, -r, &part), TSR_OK) << lastError();
    ASSERT_NE(part, nullptr);
    int rank = -1, size = -1;
    ASSERT_EQ(tsr_comm_rank(part, &rank), TSR_OK);
    ASSERT_EQ(tsr_comm_size(part, &size), TSR_OK);
    std::vector<int> members = r % 2 == 0 ? std::vector<int>{4, 2, 0} : std::vector<int>{3, 1};
    EXPECT_EQ(size, static_cast<int>(members.size()));
    EXPECT_EQ(members[rank], r) << "rank " << r << " became rank " << rank;
    EXPECT_EQ(summed(part, r), r % 2 == 0 ? 6 : 4);
    // Every rank of a part sees the others in key order: gather the parent ranks.
    std::vector<int32_t> mine{r}, all(size);
    ASSERT_EQ(tsr_allgather(part, mine.data(), all.data(), 1, TSR_INT32, nullptr), TSR_OK) << lastError();
    for (int i = 0; i < size; ++i) EXPECT_EQ(all[i], members[i]);
    // The parent goes on beside its parts.
    EXPECT_EQ(summed(comm, 1), 5);
    ASSERT_EQ(tsr_comm_destroy(part), TSR_OK);
    EXPECT_EQ(summed(comm, r), 10);
  });
}

// Ranks {1, 3} of 4 (as torch's new_group([1, 3])), the others take part with no color; then
// a second split of the same parent (a different secret and job id) and a split of a split.
TEST(CApiSplit, NoColorSecondSplitAndSplitOfASplit) {
  runCRanks(4, [](tsr_comm_t comm, int r) {
    tsr_comm_t odd = nullptr;
    ASSERT_EQ(tsr_comm_split(comm, r % 2 == 1 ? 0 : TSR_COMM_SPLIT_NOCOLOR, 0, &odd), TSR_OK) << lastError();
    EXPECT_EQ(odd != nullptr, r % 2 == 1);
    tsr_comm_t all = nullptr;
    ASSERT_EQ(tsr_comm_split(comm, 0, 0, &all), TSR_OK) << lastError();
    ASSERT_NE(all, nullptr);
    EXPECT_EQ(summed(all, r), 6);
    if (odd) {
      EXPECT_EQ(summed(odd, r), 4);
      tsr_comm_t single = nullptr;
      ASSERT_EQ(tsr_comm_split(odd, r, 0, &single), TSR_OK) << lastError();
      int size = 0;
      ASSERT_EQ(tsr_comm_size(single, &size), TSR_OK);
      EXPECT_EQ(size, 1);
      EXPECT_EQ(summed(single, 7), 7);
      ASSERT_EQ(tsr_comm_destroy(single), TSR_OK);
      ASSERT_EQ(tsr_comm_destroy(odd), TSR_OK);
    }
    ASSERT_EQ(tsr_comm_destroy(all), TSR_OK);
  });
}

// A long job's recoveries chain: each split and shrink derives its job id from its parent's,
// and ids that only grew (a shrink adds one hex digit per 4 ranks) passed the bootstrap's
// 256-byte limit after some twenty rounds; a fixed-length digest keeps them within it.
TEST(CApiSplit, ChainsOfSplitsAndShrinksGoOn) {
  runCRanks(3, [](tsr_comm_t comm, int r) {
    tsr_comm_t current = comm;
    for (int round = 0; round < 40; ++round) {
      tsr_comm_t next = nullptr;
      if (round % 2 == 0) {
        ASSERT_EQ(tsr_comm_split(current, 0, 0, &next), TSR_OK) << "round " << round << ": " << lastError();
      } else {
        ASSERT_EQ(tsr_comm_shrink(current, &next), TSR_OK) << "round " << round << ": " << lastError();
      }
      ASSERT_NE(next, nullptr);
      if (current != comm) {
        ASSERT_EQ(tsr_comm_destroy(current), TSR_OK);
      }
      current = next;
    }
    // Only now: a shrink revokes its communicator at once, so a collective just before it
    // may fail on a rank the others have already left for the shrink (ULFM's revoke does so).
    EXPECT_EQ(summed(current, r), 3);
    ASSERT_EQ(tsr_comm_destroy(current), TSR_OK);
  });
}

TEST(CApiSplit, BadArgumentsAreNamed) {
  runCRanks(1, [](tsr_comm_t comm, int) {
    tsr_comm_t part = reinterpret_cast<tsr_comm_t>(0x1);
    EXPECT_EQ(tsr_comm_split(comm, -2, 0, &part), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("color -2"), std::string::npos) << lastError();
    EXPECT_EQ(part, nullptr);
    EXPECT_EQ(tsr_comm_split(comm, 0, 0, nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("newcomm is NULL"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_comm_split(nullptr, 0, 0, &part), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("comm is NULL"), std::string::npos) << lastError();
  });
}

// A rank that splits while another calls a different collective: both are told, neither hangs.
TEST(CApiSplit, ASplitAgainstAnotherCollectiveIsAMismatch) {
  runCRanks(2, [](tsr_comm_t comm, int r) {
    if (r == 0) {
      tsr_comm_t part = nullptr;
      EXPECT_EQ(tsr_comm_split(comm, 0, 0, &part), TSR_ERR_MISMATCH) << lastError();
      EXPECT_NE(lastError().find("split (color 0)"), std::string::npos) << lastError();
      EXPECT_EQ(part, nullptr);
    } else {
      int64_t in = 1, out = 0;
      EXPECT_EQ(tsr_allreduce(comm, &in, &out, 1, TSR_INT64, TSR_SUM, nullptr), TSR_ERR_MISMATCH) << lastError();
    }
  });
}

}  // namespace

// A compressed tensor moves to another communicator of the same ranks (as after a shrink or a
// grow) keeping what it held back; its name is free again on the old one, and a name taken on
// the new one is refused, naming it.
TEST(CApiSplit, ATensorMovesWithItsResidual) {
  runCRanks(3, [](tsr_comm_t comm, int r) {
    const tsr_param_t params[] = {{"algorithm", "topk"}, {"k", "4"}};
    tsr_tensor_t tensor = nullptr;
    ASSERT_EQ(tsr_tensor_create(comm, "g", 64, TSR_FLOAT32, params, 2, &tensor), TSR_OK) << lastError();
    std::vector<float> grad(64);
    for (int i = 0; i < 64; ++i) grad[i] = static_cast<float>((i * 7 + r) % 13) - 6.0f;
    ASSERT_EQ(tsr_tensor_allreduce(tensor, grad.data(), nullptr), TSR_OK) << lastError();
    std::vector<float> held(64), moved(64);
    ASSERT_EQ(tsr_tensor_residual(tensor, held.data()), TSR_OK);
    tsr_comm_t next = nullptr;
    ASSERT_EQ(tsr_comm_split(comm, 0, 0, &next), TSR_OK) << lastError();
    tsr_tensor_t taken = nullptr;
    ASSERT_EQ(tsr_tensor_create(next, "h", 64, TSR_FLOAT32, params, 2, &taken), TSR_OK) << lastError();
    ASSERT_EQ(tsr_tensor_move(tensor, next), TSR_OK) << lastError();
    ASSERT_EQ(tsr_tensor_residual(tensor, moved.data()), TSR_OK);
    EXPECT_EQ(moved, held);
    // A step on the new communicator: every rank gets the same result.
    std::vector<float> ones(64, 1.0f), all(3 * 64);
    ASSERT_EQ(tsr_tensor_allreduce(tensor, ones.data(), nullptr), TSR_OK) << lastError();
    ASSERT_EQ(tsr_allgather(next, ones.data(), all.data(), 64, TSR_FLOAT32, nullptr), TSR_OK) << lastError();
    for (int i = 0; i < 64; ++i) EXPECT_EQ(all[i], all[64 + i]);
    tsr_tensor_t again = nullptr;  // the name is free on the old communicator now
    ASSERT_EQ(tsr_tensor_create(comm, "g", 64, TSR_FLOAT32, params, 2, &again), TSR_OK) << lastError();
    tsr_tensor_t clash = nullptr;
    ASSERT_EQ(tsr_tensor_create(comm, "h", 64, TSR_FLOAT32, params, 2, &clash), TSR_OK) << lastError();
    EXPECT_EQ(tsr_tensor_move(clash, next), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(lastError()).find("tensor h: a live tensor of the new communicator already has that name"),
              std::string::npos)
        << lastError();
    for (tsr_tensor_t t : {tensor, taken, again, clash}) EXPECT_EQ(tsr_tensor_destroy(t), TSR_OK);
    ASSERT_EQ(tsr_comm_destroy(next), TSR_OK);
  });
}
