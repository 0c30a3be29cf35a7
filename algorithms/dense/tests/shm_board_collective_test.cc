// The shared-memory board's allreduce (algorithms/dense/shm_board_collective.h) over plain memory,
// every rank's task driven from one thread: every dtype and op against the float64
// reference, the same bits on every rank, slots reused across consecutive and overlapping
// allreduces, and callers that differ (count, route) named rather than left waiting.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "algorithms/dense/shm_board_collective.h"
#include "algorithms/dense/tests/shm_stage_driver.h"
#include "algorithms/plan/plan.h"
#include "base/reference_values.h"

namespace tsr::algorithms {
namespace {

using reference::closeEnough;
using reference::inputValue;
using reference::loadValue;
using reference::reduceReference;
using reference::storeValue;

struct Board {
  std::unique_ptr<void, void (*)(void*)> memory;
  ShmBoard board;
  explicit Board(int n) : memory(std::aligned_alloc(64, ShmBoard::bytesFor(n)), std::free), board(memory.get(), n) {
    ShmBoard::format(memory.get(), n);
  }
};

TEST(ShmBoardCollective, EveryDtypeAndOpMatchesTheReferenceWithTheSameBitsEverywhere) {
  for (int n : {2, 3, 4, 7}) {
    Board b(n);
    uint64_t index = 0;
    uint32_t seq = 10;
    for (DataType t : reference::kAllTypes)
      for (ReduceOp op : reference::opsFor(t))
        for (size_t count : {size_t{1}, size_t(n - 1 ? n - 1 : 1), size_t(n + 1), kShmPayloadBytes / dataTypeSize(t)}) {
          const size_t esize = dataTypeSize(t);
          std::vector<std::vector<char>> in(n, std::vector<char>(count * esize)), out = in;
          std::vector<std::unique_ptr<ShmBoardCollective>> tasks;
          for (int r = 0; r < n; ++r) {
            for (size_t j = 0; j < count; ++j) storeValue(in[r].data(), j, t, inputValue(r, j, op));
            b.board.announce(r, seq, ShmRoute::kBoard, ShmBoardCollective::callOf({nullptr, nullptr, count, t, op}));
            tasks.push_back(std::make_unique<ShmBoardCollective>(
                b.board, RunIdentity{r, 0, seq}, index, ShmCollectiveArgs{in[r].data(), out[r].data(), count, t, op}));
          }
          std::string what = std::string(dataTypeName(t)) + " " + reduceOpName(op) + " N=" + std::to_string(n) +
                             " count " + std::to_string(count);
          for (const Status& s : drive(tasks)) ASSERT_TRUE(s.isOk()) << what << ": " << s.toString();
          for (int r = 0; r < n; ++r) {
            for (size_t j = 0; j < count; ++j) {
              double want = reduceReference(n, j, op, t), got = loadValue(out[r].data(), j, t);
              ASSERT_TRUE(closeEnough(got, want, t))
                  << what << " rank " << r << " element " << j << ": got " << got << " want " << want;
            }
            ASSERT_EQ(std::memcmp(out[r].data(), out[0].data(), count * esize), 0) << what << ": rank " << r;
          }
          ++index;
          ++seq;
        }
  }
}

// Each rank posts two allreduces before any finishes (non-blocking calls), in place; a rank
// cannot post the third into slot 0 before every rank has finished the first.
TEST(ShmBoardCollective, OverlappingAllreducesUseTheirOwnSlots) {
  const int n = 3;
  Board b(n);
  std::vector<std::vector<float>> data(n, std::vector<float>(4 * 8));
  std::vector<std::unique_ptr<ShmBoardCollective>> tasks;
  for (int k = 0; k < 3; ++k)
    for (int r = 0; r < n; ++r) {
      float* mine = data[r].data() + 8 * k;
      for (int j = 0; j < 8; ++j) mine[j] = static_cast<float>((k + 1) * 100 + r * 10 + j);
      tasks.push_back(
          std::make_unique<ShmBoardCollective>(b.board, RunIdentity{r, 0, static_cast<uint32_t>(k)}, k,
                                               ShmCollectiveArgs{mine, mine, 8, DataType::kF32, ReduceOp::kSum}));
    }
  // Ranks 0 and 1 start all three; rank 2 only the first two: the third allreduce of ranks 0
  // and 1 cannot be posted (rank 2 has not finished the first).
  std::vector<Status> st(tasks.size(), Status(Code::kInProgress, ""));
  for (int k = 0; k < 3; ++k)
    for (int r = 0; r < 2; ++r) st[k * n + r] = tasks[k * n + r]->start();
  EXPECT_EQ(st[2 * n + 0].code(), Code::kInProgress);
  EXPECT_EQ(tasks[2 * n + 0]->waitingOn(), 1) << "waits on the first rank that has not finished allreduce 0";
  for (int k = 0; k < 2; ++k) st[k * n + 2] = tasks[k * n + 2]->start();
  st[2 * n + 2] = tasks[2 * n + 2]->start();
  for (int turn = 0; turn < 100; ++turn)
    for (size_t i = 0; i < tasks.size(); ++i)
      if (st[i].code() == Code::kInProgress) st[i] = tasks[i]->progress();
  for (const Status& s : st) ASSERT_TRUE(s.isOk()) << s.toString();
  for (int k = 0; k < 3; ++k)
    for (int r = 0; r < n; ++r)
      for (int j = 0; j < 8; ++j)
        ASSERT_EQ(data[r][8 * k + j], static_cast<float>(3 * (k + 1) * 100 + 30 + 3 * j)) << "allreduce " << k;
}

TEST(ShmBoardCollective, DifferentCountsAreNamedOnBothRanks) {
  Board b(2);
  std::vector<float> in(8, 1.0f), out0(8), out1(8);
  std::vector<std::unique_ptr<ShmBoardCollective>> tasks;
  tasks.push_back(std::make_unique<ShmBoardCollective>(
      b.board, RunIdentity{0, 0, 5}, 0, ShmCollectiveArgs{in.data(), out0.data(), 2, DataType::kF32, ReduceOp::kSum}));
  tasks.push_back(std::make_unique<ShmBoardCollective>(
      b.board, RunIdentity{1, 0, 5}, 0, ShmCollectiveArgs{in.data(), out1.data(), 3, DataType::kF32, ReduceOp::kSum}));
  auto st = drive(tasks);
  expectMismatchNaming(st, {"count differs", "count=2", "count=3"});
}

// The peer ran this sequence number as a message plan (say, a count above the board's
// limit): its announcement names it, so the waiting rank fails at once instead of waiting.
TEST(ShmBoardCollective, APeerThatTookAnotherRouteIsNamed) {
  Board b(3);
  std::vector<float> in(2, 1.0f), out(2);
  b.board.announce(2, 9, ShmRoute::kPlan,
                   {static_cast<uint8_t>(CollectiveKind::kAllreduce), static_cast<uint8_t>(DataType::kF32), 0, 1000});
  std::vector<std::unique_ptr<ShmBoardCollective>> tasks;
  tasks.push_back(std::make_unique<ShmBoardCollective>(
      b.board, RunIdentity{0, 0, 9}, 0, ShmCollectiveArgs{in.data(), out.data(), 2, DataType::kF32, ReduceOp::kSum}));
  auto st = drive(tasks, 10);
  ASSERT_EQ(st[0].code(), Code::kInProgress) << "rank 1 has announced nothing yet: " << st[0].toString();
  EXPECT_EQ(tasks[0]->waitingOn(), 1);
  b.board.announce(1, 9, ShmRoute::kBoard,
                   ShmBoardCollective::callOf({nullptr, nullptr, 2, DataType::kF32, ReduceOp::kSum}));
  std::vector<float> in1(2, 2.0f), out1(2);
  tasks.push_back(std::make_unique<ShmBoardCollective>(
      b.board, RunIdentity{1, 0, 9}, 0, ShmCollectiveArgs{in1.data(), out1.data(), 2, DataType::kF32, ReduceOp::kSum}));
  st = drive(tasks, 10);
  expectMismatchNaming(st, {"rank 2 called allreduce(count=1000"});
}

TEST(ShmBoardCollective, BarrierWaitsForEveryRank) {
  Board b(3);
  std::vector<std::unique_ptr<ShmBoardCollective>> tasks;
  for (int r = 0; r < 2; ++r)
    tasks.push_back(std::make_unique<ShmBoardCollective>(
        b.board, RunIdentity{r, 0, 1}, 0,
        ShmCollectiveArgs{nullptr, nullptr, 0, DataType::kF32, ReduceOp::kSum, true}));
  auto st = drive(tasks, 10);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(st[r].code(), Code::kInProgress);
  EXPECT_EQ(tasks[0]->waitingOn(), 2);
  tasks.push_back(std::make_unique<ShmBoardCollective>(
      b.board, RunIdentity{2, 0, 1}, 0, ShmCollectiveArgs{nullptr, nullptr, 0, DataType::kF32, ReduceOp::kSum, true}));
  st = drive(tasks, 10);
  for (const Status& s : st) EXPECT_TRUE(s.isOk()) << s.toString();
}

}  // namespace
}  // namespace tsr::algorithms
