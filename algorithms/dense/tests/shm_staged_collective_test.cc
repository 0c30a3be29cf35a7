// The staged shared-memory allreduce (algorithms/dense/shm_staged_collective.h) over plain
// memory, every rank's task driven from one thread: every dtype and op against the float64
// reference across chunk boundaries, the same bits on every rank, stages reused across
// consecutive and overlapping allreduces, in place, and callers that differ (count, route)
// named rather than left waiting.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "algorithms/dense/shm_staged_collective.h"
#include "algorithms/dense/tests/shm_stage_driver.h"
#include "algorithms/plan/plan.h"
#include "base/reference_values.h"

namespace tsr::algorithms {
namespace shm_staged_collective_test {  // named, not anonymous: the test binary is a unity build

using reference::closeEnough;
using reference::inputValue;
using reference::loadValue;
using reference::reduceReference;
using reference::storeValue;

using Tasks = std::vector<std::unique_ptr<ShmStagedCollective>>;

ShmCall callFor(size_t count, DataType t = DataType::kF32, ReduceOp op = ReduceOp::kSum) {
  return ShmBoardCollective::callOf({nullptr, nullptr, count, t, op});
}

// Runs one allreduce of `count` elements on every rank from `ticket` and checks it.
void runAndCheck(Segment& s, int n, uint32_t seq, uint64_t* ticket, size_t count, DataType t, ReduceOp op) {
  const size_t esize = dataTypeSize(t);
  std::vector<std::vector<char>> in(n, std::vector<char>(count * esize)), out = in;
  Tasks tasks;
  for (int r = 0; r < n; ++r) {
    for (size_t j = 0; j < count; ++j) storeValue(in[r].data(), j, t, inputValue(r, j, op));
    s.board.announce(r, seq, ShmRoute::kStaged, callFor(count, t, op));
    tasks.push_back(
        std::make_unique<ShmStagedCollective>(s.staging, s.board, RunIdentity{r, 0, seq}, *ticket,
                                              ShmCollectiveArgs{in[r].data(), out[r].data(), count, t, op}));
  }
  *ticket += ShmStagedLayout(CollectiveKind::kAllreduce, count, t, n, -1).chunks();
  std::string what = std::string(dataTypeName(t)) + " " + reduceOpName(op) + " N=" + std::to_string(n) + " count " +
                     std::to_string(count);
  for (const Status& st : drive(tasks)) ASSERT_TRUE(st.isOk()) << what << ": " << st.toString();
  for (int r = 0; r < n; ++r) {
    for (size_t j = 0; j < count; ++j) {
      double want = reduceReference(n, j, op, t), got = loadValue(out[r].data(), j, t);
      ASSERT_TRUE(closeEnough(got, want, t))
          << what << " rank " << r << " element " << j << ": got " << got << " want " << want;
    }
    ASSERT_EQ(std::memcmp(out[r].data(), out[0].data(), count * esize), 0) << what << ": rank " << r;
  }
}

TEST(ShmStagedAllreduce, EveryDtypeAndOpAcrossChunkBoundaries) {
  for (int n : {2, 3, 4, 7}) {
    Segment s(n);
    uint64_t ticket = 0;
    uint32_t seq = 3;
    for (DataType t : reference::kAllTypes) {
      const size_t chunk = kShmStageBytes / dataTypeSize(t);
      for (ReduceOp op : reference::opsFor(t))
        for (size_t count : {size_t{1}, size_t(n - 1), size_t(n + 1), chunk - 1, chunk + 1})
          runAndCheck(s, n, seq++, &ticket, count, t, op);
    }
  }
}

TEST(ShmStagedAllreduce, ManyChunks) {
  for (int n : {4, 5}) {
    Segment s(n);
    uint64_t ticket = 0;
    runAndCheck(s, n, 0, &ticket, (size_t{1} << 20) + 3, DataType::kF32, ReduceOp::kSum);
    runAndCheck(s, n, 1, &ticket, (size_t{1} << 20) + 3, DataType::kF16, ReduceOp::kAvg);
    const uint64_t f32Chunks =
        ShmStagedLayout(CollectiveKind::kAllreduce, (size_t{1} << 20) + 3, DataType::kF32, n, -1).chunks();
    EXPECT_EQ(ticket, f32Chunks + (f32Chunks + 1) / 2) << "f16 chunks hold twice the elements";
  }
}

// Two in-place allreduces of three chunks each, both started on every rank before either
// finishes: the second's first chunk takes the stage the first's second-to-last used.
TEST(ShmStagedAllreduce, OverlappingInPlaceAllreducesShareTheStagesInOrder) {
  const int n = 3;
  Segment s(n);
  const size_t count = 2 * (kShmStageBytes / sizeof(float)) + 5;
  std::vector<std::vector<float>> data(n, std::vector<float>(2 * count));
  Tasks tasks;
  for (int k = 0; k < 2; ++k)
    for (int r = 0; r < n; ++r) {
      float* mine = data[r].data() + count * k;
      for (size_t j = 0; j < count; ++j) mine[j] = static_cast<float>((k + 1) * 1000 + r * 10 + j % 7);
      s.board.announce(r, k, ShmRoute::kStaged, callFor(count));
      tasks.push_back(
          std::make_unique<ShmStagedCollective>(s.staging, s.board, RunIdentity{r, 0, uint32_t(k)}, 3 * k,
                                                ShmCollectiveArgs{mine, mine, count, DataType::kF32, ReduceOp::kSum}));
    }
  for (const Status& st : drive(tasks)) ASSERT_TRUE(st.isOk()) << st.toString();
  for (int k = 0; k < 2; ++k)
    for (int r = 0; r < n; ++r)
      for (size_t j = 0; j < count; ++j)
        ASSERT_EQ(data[r][count * k + j], static_cast<float>(3 * (k + 1) * 1000 + 30 + 3 * (j % 7)))
            << "allreduce " << k << " rank " << r << " element " << j;
}

// Each rank's later allreduce is driven before its earlier one (two threads waiting at once
// do that): the later one must not run ahead of the earlier one's tickets on any phase, or
// the counters would count back and every rank would wait for ever.
TEST(ShmStagedAllreduce, ALaterAllreduceDrivenFirstWaitsForTheEarlierOnesTickets) {
  const int n = 4;
  Segment s(n);
  const size_t count = 5000;
  std::vector<std::vector<int32_t>> in(2 * n, std::vector<int32_t>(count)), out = in;
  Tasks tasks;  // the later allreduce's tasks first, so each turn drives them first
  for (int k : {1, 0})
    for (int r = 0; r < n; ++r) {
      std::fill(in[k * n + r].begin(), in[k * n + r].end(), (k + 1) * (r + 1));
      tasks.push_back(std::make_unique<ShmStagedCollective>(
          s.staging, s.board, RunIdentity{r, 0, uint32_t(k)}, k,
          ShmCollectiveArgs{in[k * n + r].data(), out[k * n + r].data(), count, DataType::kI32, ReduceOp::kSum}));
    }
  for (int round = 0; round < 3; ++round) {
    auto st = drive(tasks, 1000);
    for (const Status& x : st) ASSERT_TRUE(x.isOk()) << "round " << round << ": " << x.toString();
    for (int k = 0; k < 2; ++k)
      for (int r = 0; r < n; ++r) ASSERT_EQ(out[k * n + r][count - 1], (k + 1) * 10) << "allreduce " << k;
    // The next round's pair: tickets 2 and 3, 4 and 5 (stages reused in order).
    for (int i = 0; i < 2 * n; ++i) {
      const int k = i < n ? 1 : 0, r = i % n;
      tasks[i] = std::make_unique<ShmStagedCollective>(
          s.staging, s.board, RunIdentity{r, 0, uint32_t(2 * round + 2 + k)}, 2 * round + 2 + k,
          ShmCollectiveArgs{in[k * n + r].data(), out[k * n + r].data(), count, DataType::kI32, ReduceOp::kSum});
    }
  }
}

// A rank posts its first two chunks and then waits on the peer that has not posted; it
// cannot take the first stage again before every peer has copied the first chunk out.
TEST(ShmStagedAllreduce, WaitsOnTheRankThatHasNotPosted) {
  const int n = 3;
  Segment s(n);
  const size_t count = 3 * (kShmStageBytes / sizeof(float));
  std::vector<std::vector<float>> in(n, std::vector<float>(count, 1.0f)), out = in;
  Tasks tasks;
  for (int r = 0; r < n; ++r)
    tasks.push_back(std::make_unique<ShmStagedCollective>(
        s.staging, s.board, RunIdentity{r, 0, 0}, 0,
        ShmCollectiveArgs{in[r].data(), out[r].data(), count, DataType::kF32, ReduceOp::kSum}));
  for (int r : {0, 2}) EXPECT_EQ(tasks[r]->start().code(), Code::kInProgress);
  EXPECT_EQ(tasks[0]->waitingOn(), 1);
  EXPECT_EQ(s.staging.area(0).posted.value.load(), 2u) << "two stages, the third chunk waits";
  auto st = drive(tasks);
  for (const Status& x : st) ASSERT_TRUE(x.isOk()) << x.toString();
  EXPECT_EQ(out[2][count - 1], 3.0f);
}

TEST(ShmStagedAllreduce, DifferentCountsAreNamedOnBothRanks) {
  Segment s(2);
  std::vector<float> in(100000, 1.0f), out0(100000), out1(100000);
  Tasks tasks;
  tasks.push_back(std::make_unique<ShmStagedCollective>(
      s.staging, s.board, RunIdentity{0, 0, 5}, 0,
      ShmCollectiveArgs{in.data(), out0.data(), 90000, DataType::kF32, ReduceOp::kSum}));
  tasks.push_back(std::make_unique<ShmStagedCollective>(
      s.staging, s.board, RunIdentity{1, 0, 5}, 0,
      ShmCollectiveArgs{in.data(), out1.data(), 99999, DataType::kF32, ReduceOp::kSum}));
  auto st = drive(tasks);
  expectMismatchNaming(st, {"count differs", "count=90000", "count=99999"});
}

// The peer ran this sequence number as a message plan (TSR_ALGO set differently, say): its
// announcement names it, so the waiting rank fails at once instead of waiting.
TEST(ShmStagedAllreduce, APeerThatTookAnotherRouteIsNamed) {
  Segment s(2);
  std::vector<float> in(50000, 1.0f), out(50000);
  Tasks tasks;
  tasks.push_back(std::make_unique<ShmStagedCollective>(
      s.staging, s.board, RunIdentity{0, 0, 9}, 0,
      ShmCollectiveArgs{in.data(), out.data(), 50000, DataType::kF32, ReduceOp::kSum}));
  auto st = drive(tasks, 10);
  ASSERT_EQ(st[0].code(), Code::kInProgress) << "rank 1 has announced nothing yet: " << st[0].toString();
  EXPECT_EQ(tasks[0]->waitingOn(), 1);
  s.board.announce(1, 9, ShmRoute::kPlan, callFor(50000));
  st[0] = tasks[0]->progress();
  EXPECT_EQ(st[0].code(), Code::kMismatch) << st[0].toString();
  EXPECT_NE(st[0].message().find("rank 1 ran it as messages"), std::string::npos) << st[0].message();
}

}  // namespace shm_staged_collective_test
}  // namespace tsr::algorithms
