// reduce_scatter, allgather and broadcast on the shared-memory board
// (algorithms/dense/shm_board_collective.h) over plain memory, every rank's task driven from
// one thread: against the float64 reference (reduce_scatter) or the exact input bits (the
// others) up to a full slot, in place, the four kinds reusing the two slots in turn, a
// broadcast waiting for every rank's call, and a different root named on every rank.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/dense/shm_board_collective.h"
#include "algorithms/dense/tests/shm_stage_driver.h"
#include "base/reference_values.h"

namespace tsr::algorithms {
namespace {

using reference::closeEnough;
using reference::inputValue;
using reference::loadValue;
using reference::reduceReference;
using reference::storeValue;

using Tasks = std::vector<std::unique_ptr<ShmBoardCollective>>;
using Buffers = std::vector<std::vector<char>>;

// Rank r's task for `args` on in[r] / out[r] (or, for `inPlace`, on in[r] alone, the output at
// `outAt(r)` bytes into it).
std::unique_ptr<ShmBoardCollective> task(Segment& s, int r, uint32_t seq, uint64_t index, ShmCollectiveArgs args,
                                         Buffers& in, Buffers& out, long inPlaceAt = -1) {
  args.input = in[r].data();
  args.output = inPlaceAt >= 0 ? in[r].data() + inPlaceAt : out[r].data();
  s.board.announce(r, seq, ShmRoute::kBoard, ShmBoardCollective::callOf(args));
  return std::make_unique<ShmBoardCollective>(s.board, RunIdentity{r, 0, seq}, index, args);
}

TEST(ShmBoardCollective, PayloadIsWhatEachRankPostsAndFitsASlot) {
  const size_t slotFloats = kShmPayloadBytes / 4;
  ShmCollectiveArgs rs{
      nullptr, nullptr, slotFloats / 4, DataType::kF32, ReduceOp::kSum, false, CollectiveKind::kReduceScatter};
  EXPECT_EQ(ShmBoardCollective::payloadBytes(rs, 4, 1), kShmPayloadBytes);
  EXPECT_TRUE(ShmBoardCollective::fits(rs, 4));
  EXPECT_FALSE(ShmBoardCollective::fits(rs, 5)) << "five blocks of a quarter slot";
  ShmCollectiveArgs bc{nullptr, nullptr, slotFloats, DataType::kF32, ReduceOp::kSum, false, CollectiveKind::kBroadcast,
                       2};
  EXPECT_EQ(ShmBoardCollective::payloadBytes(bc, 4, 2), kShmPayloadBytes);
  EXPECT_EQ(ShmBoardCollective::payloadBytes(bc, 4, 0), 0u) << "only the root posts data";
  EXPECT_TRUE(ShmBoardCollective::fits(bc, 4));
  bc.count += 1;
  EXPECT_FALSE(ShmBoardCollective::fits(bc, 4));
  ShmCollectiveArgs ag{nullptr, nullptr, slotFloats, DataType::kF32, ReduceOp::kSum, false, CollectiveKind::kAllgather};
  EXPECT_TRUE(ShmBoardCollective::fits(ag, 8)) << "each rank posts only its own block";
}

TEST(ShmBoardCollective, ReduceScatterEveryDtypeAndOpMatchesTheReference) {
  for (int n : {2, 3, 4, 7}) {
    Segment s(n);
    uint64_t index = 0;
    uint32_t seq = 0;
    for (DataType t : reference::kAllTypes)
      for (ReduceOp op : reference::opsFor(t)) {
        const size_t esize = dataTypeSize(t), most = kShmPayloadBytes / (n * esize);
        for (size_t count : {size_t{1}, most - 1, most}) {
          const bool inPlace = count == most - 1;
          Buffers in(n, std::vector<char>(n * count * esize)), out(n, std::vector<char>(count * esize));
          Tasks tasks;
          for (int r = 0; r < n; ++r) {
            for (size_t j = 0; j < n * count; ++j) storeValue(in[r].data(), j, t, inputValue(r, j, op));
            tasks.push_back(task(s, r, seq, index,
                                 {nullptr, nullptr, count, t, op, false, CollectiveKind::kReduceScatter}, in, out,
                                 inPlace ? static_cast<long>(r * count * esize) : -1));
          }
          const std::string what = std::string(dataTypeName(t)) + " " + reduceOpName(op) + " N=" + std::to_string(n) +
                                   " count " + std::to_string(count) + (inPlace ? " in place" : "");
          for (const Status& st : drive(tasks)) ASSERT_TRUE(st.isOk()) << what << ": " << st.toString();
          for (int r = 0; r < n; ++r) {
            const char* got = inPlace ? in[r].data() + r * count * esize : out[r].data();
            for (size_t j = 0; j < count; ++j) {
              const double want = reduceReference(n, r * count + j, op, t), value = loadValue(got, j, t);
              ASSERT_TRUE(closeEnough(value, want, t))
                  << what << " rank " << r << " element " << j << ": got " << value << " want " << want;
            }
          }
          ++index;
          ++seq;
        }
      }
  }
}

// allgather and broadcast move bits: every output element must be the exact input element,
// out of place and in place (allgather's input is its own block of the output; broadcast's
// root has one buffer).
TEST(ShmBoardCollective, AllgatherAndBroadcastMoveEveryElement) {
  auto value = [](int rank, size_t j) { return static_cast<int32_t>(rank * 1000003 + j); };
  for (int n : {2, 3, 5}) {
    Segment s(n);
    uint64_t index = 0;
    uint32_t seq = 0;
    const size_t most = kShmPayloadBytes / 4;
    for (size_t count : {size_t{1}, most / n, most})
      for (int root : {-1, 0, n - 1})
        for (bool inPlace : {false, true}) {
          const CollectiveKind kind = root < 0 ? CollectiveKind::kAllgather : CollectiveKind::kBroadcast;
          const size_t outCount = root < 0 ? n * count : count;
          Buffers in(n, std::vector<char>(outCount * 4, 'x')), out(n, std::vector<char>(outCount * 4, 'x'));
          Tasks tasks;
          for (int r = 0; r < n; ++r) {
            const size_t at = root < 0 && inPlace ? r * count : 0;
            for (size_t j = 0; j < count; ++j) reinterpret_cast<int32_t*>(in[r].data())[at + j] = value(r, j);
            ShmCollectiveArgs args{nullptr, nullptr, count, DataType::kI32, ReduceOp::kSum, false, kind, root};
            tasks.push_back(task(s, r, seq, index, args, in, out, inPlace ? 0 : -1));
            if (inPlace && root < 0) {  // the input is the rank's block, the output the whole buffer
              args.input = in[r].data() + at * 4;
              args.output = in[r].data();
              tasks.back() = std::make_unique<ShmBoardCollective>(s.board, RunIdentity{r, 0, seq}, index, args);
            }
          }
          const std::string what = std::string(collectiveName(kind)) + " N=" + std::to_string(n) + " count " +
                                   std::to_string(count) + " root " + std::to_string(root) +
                                   (inPlace ? " in place" : "");
          for (const Status& st : drive(tasks)) ASSERT_TRUE(st.isOk()) << what << ": " << st.toString();
          for (int r = 0; r < n; ++r) {
            const auto* got = reinterpret_cast<const int32_t*>(inPlace ? in[r].data() : out[r].data());
            for (size_t j = 0; j < outCount; ++j) {
              const int32_t want = root < 0 ? value(static_cast<int>(j / count), j % count) : value(root, j);
              ASSERT_EQ(got[j], want) << what << " rank " << r << " element " << j;
            }
          }
          ++index;
          ++seq;
        }
  }
}

// A broadcast's other ranks read only the root's slot, yet each waits until every rank has
// called it (so that each can check every call): rank 1 does not finish before rank 2 comes.
TEST(ShmBoardCollective, ABroadcastFinishesOnceEveryRankHasCalledIt) {
  const int n = 3;
  Segment s(n);
  Buffers in(n, std::vector<char>(16)), out = in;
  std::memcpy(in[0].data(), "from the root 0", 16);
  const ShmCollectiveArgs args{nullptr, nullptr, 4, DataType::kI32, ReduceOp::kSum, false, CollectiveKind::kBroadcast,
                               0};
  Tasks tasks;
  for (int r = 0; r < 2; ++r) tasks.push_back(task(s, r, 3, 0, args, in, out));
  auto st = drive(tasks, 10);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(st[r].code(), Code::kInProgress) << "rank " << r << ": " << st[r].toString();
    EXPECT_EQ(tasks[r]->waitingOn(), 2) << "rank " << r;
  }
  tasks.push_back(task(s, 2, 3, 0, args, in, out));
  for (const Status& s2 : drive(tasks, 10)) EXPECT_TRUE(s2.isOk()) << s2.toString();
  for (int r = 0; r < n; ++r) EXPECT_STREQ(out[r].data(), "from the root 0") << "rank " << r;
}

// Each of two ranks thinks it is the root: both are told, with both roots, rather than each
// finishing with its own data.
TEST(ShmBoardCollective, ADifferentRootIsNamedOnBothRanks) {
  Segment s(2);
  Buffers in(2, std::vector<char>(8, 'a')), out = in;
  Tasks tasks;
  for (int r = 0; r < 2; ++r)
    tasks.push_back(task(s, r, 6, 0,
                         {nullptr, nullptr, 2, DataType::kI32, ReduceOp::kSum, false, CollectiveKind::kBroadcast, r},
                         in, out));
  auto st = drive(tasks);
  expectMismatchNaming(st, {"root differs", "root=0", "root=1"});
}

// Rank 0 names itself root, ranks 1..3 name rank 1: the ranks that agree with each other are
// told too, not only the two that think they are root (they would otherwise finish with rank
// 1's data while rank 0 keeps its own).
TEST(ShmBoardCollective, ADifferentRootIsNamedOnEveryRank) {
  const int n = 4;
  Segment s(n);
  Buffers in(n, std::vector<char>(8, 'a')), out = in;
  Tasks tasks;
  for (int r = 0; r < n; ++r)
    tasks.push_back(
        task(s, r, 2, 0,
             {nullptr, nullptr, 2, DataType::kI32, ReduceOp::kSum, false, CollectiveKind::kBroadcast, r == 0 ? 0 : 1},
             in, out));
  expectMismatchNaming(drive(tasks), {"root differs", "root=0", "root=1"});
}

// An allreduce, a reduce_scatter, an allgather and a broadcast, all started on every rank
// before any finishes: the third and fourth reuse the first two's slots once every rank is
// done with them.
TEST(ShmBoardCollective, TheFourKindsReuseTheSlotsInTurn) {
  const int n = 4;
  const size_t count = 8;
  Segment s(n);
  const CollectiveKind kinds[] = {CollectiveKind::kAllreduce, CollectiveKind::kReduceScatter,
                                  CollectiveKind::kAllgather, CollectiveKind::kBroadcast};
  std::vector<std::vector<float>> in(4 * n, std::vector<float>(n * count)), out = in;
  Tasks tasks;
  for (int k = 0; k < 4; ++k)
    for (int r = 0; r < n; ++r) {
      std::fill(in[k * n + r].begin(), in[k * n + r].end(), static_cast<float>(10 * k + r + 1));
      ShmCollectiveArgs a{
          in[k * n + r].data(), out[k * n + r].data(), count, DataType::kF32, ReduceOp::kSum, false, kinds[k],
          k == 3 ? 1 : -1};
      s.board.announce(r, k, ShmRoute::kBoard, ShmBoardCollective::callOf(a));
      tasks.push_back(std::make_unique<ShmBoardCollective>(s.board, RunIdentity{r, 0, uint32_t(k)}, k, a));
    }
  for (const Status& st : drive(tasks)) ASSERT_TRUE(st.isOk()) << st.toString();
  for (int r = 0; r < n; ++r) {
    for (size_t j = 0; j < count; ++j) {
      ASSERT_EQ(out[0 * n + r][j], 10.0f) << "allreduce, rank " << r << " element " << j;
      ASSERT_EQ(out[1 * n + r][j], 50.0f) << "reduce_scatter, rank " << r << " element " << j;
      ASSERT_EQ(out[3 * n + r][j], 32.0f) << "broadcast from rank 1, rank " << r << " element " << j;
    }
    for (size_t j = 0; j < n * count; ++j)
      ASSERT_EQ(out[2 * n + r][j], static_cast<float>(21 + j / count)) << "allgather, rank " << r << " element " << j;
  }
}

}  // namespace
}  // namespace tsr::algorithms
