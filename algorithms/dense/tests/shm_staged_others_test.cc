// reduce_scatter, allgather and broadcast through the shared-memory stages
// (algorithms/dense/shm_staged_collective.h) over plain memory, every rank's task driven from
// one thread: against the float64 reference (reduce_scatter) or the exact input bits (the
// others) across chunk boundaries, in place, several kinds sharing the stages in turn, and
// callers that differ (root, collective) named; the layout's pieces cover every element once.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/dense/shm_staged_collective.h"
#include "algorithms/dense/tests/shm_stage_driver.h"
#include "base/reference_values.h"

namespace tsr::algorithms {
namespace shm_staged_others_test {  // named, not anonymous: the test binary is a unity build

using reference::closeEnough;
using reference::inputValue;
using reference::loadValue;
using reference::reduceReference;
using reference::storeValue;

using Tasks = std::vector<std::unique_ptr<ShmStagedCollective>>;

size_t perStage(DataType t) { return kShmStageBytes / dataTypeSize(t); }

// Every rank's task for `args` (input and output per rank); the tickets advance past it.
Tasks makeTasks(Segment& s, int n, uint32_t seq, uint64_t* ticket, ShmCollectiveArgs args,
                std::vector<std::vector<char>>& in, std::vector<std::vector<char>>& out) {
  Tasks tasks;
  for (int r = 0; r < n; ++r) {
    ShmCollectiveArgs mine = args;
    mine.input = in[r].data();
    mine.output = out[r].data();
    s.board.announce(r, seq, ShmRoute::kStaged, ShmBoardCollective::callOf(mine));
    tasks.push_back(std::make_unique<ShmStagedCollective>(s.staging, s.board, RunIdentity{r, 0, seq}, *ticket, mine));
  }
  *ticket += ShmStagedCollective::layoutOf(args, n).chunks();
  return tasks;
}

void runReduceScatter(Segment& s, int n, uint32_t seq, uint64_t* ticket, size_t count, DataType t, ReduceOp op,
                      bool inPlace) {
  const size_t esize = dataTypeSize(t);
  std::vector<std::vector<char>> in(n, std::vector<char>(n * count * esize)), out(n, std::vector<char>(count * esize));
  for (int r = 0; r < n; ++r)
    for (size_t j = 0; j < n * count; ++j) storeValue(in[r].data(), j, t, inputValue(r, j, op));
  Tasks tasks =
      makeTasks(s, n, seq, ticket, {nullptr, nullptr, count, t, op, false, CollectiveKind::kReduceScatter}, in, out);
  if (inPlace)  // each rank's output is its own block of its input
    for (int r = 0; r < n; ++r)
      tasks[r] = std::make_unique<ShmStagedCollective>(
          s.staging, s.board, RunIdentity{r, 0, seq},
          *ticket - ShmStagedLayout(CollectiveKind::kReduceScatter, count, t, n, -1).chunks(),
          ShmCollectiveArgs{in[r].data(), in[r].data() + r * count * esize, count, t, op, false,
                            CollectiveKind::kReduceScatter});
  const std::string what = std::string("reduce_scatter ") + dataTypeName(t) + " " + reduceOpName(op) +
                           " N=" + std::to_string(n) + " count " + std::to_string(count) + (inPlace ? " in place" : "");
  for (const Status& st : drive(tasks)) ASSERT_TRUE(st.isOk()) << what << ": " << st.toString();
  for (int r = 0; r < n; ++r) {
    const char* got = inPlace ? in[r].data() + r * count * esize : out[r].data();
    for (size_t j = 0; j < count; ++j) {
      const double want = reduceReference(n, r * count + j, op, t), value = loadValue(got, j, t);
      ASSERT_TRUE(closeEnough(value, want, t))
          << what << " rank " << r << " element " << j << ": got " << value << " want " << want;
    }
  }
}

TEST(ShmStagedCollective, ReduceScatterEveryDtypeAndOpAcrossChunkBoundaries) {
  for (int n : {2, 3, 4, 7}) {
    Segment s(n);
    uint64_t ticket = 0;
    uint32_t seq = 0;
    for (DataType t : reference::kAllTypes) {
      const size_t k = perStage(t) / n;  // a block's piece per chunk
      for (ReduceOp op : reference::opsFor(t))
        for (size_t count : {size_t{1}, size_t(n + 1), k - 1, k + 1, 2 * k + 3})
          runReduceScatter(s, n, seq++, &ticket, count, t, op, count == k + 1);
    }
  }
}

// allgather and broadcast move bits: every output element must be the exact input element.
void runMove(Segment& s, int n, uint32_t seq, uint64_t* ticket, CollectiveKind kind, size_t count, int root) {
  const DataType t = DataType::kI32;
  const bool gather = kind == CollectiveKind::kAllgather;
  const size_t outCount = gather ? n * count : count;
  auto value = [](int rank, size_t j) { return static_cast<int32_t>(rank * 1000003 + j); };
  std::vector<std::vector<char>> in(n, std::vector<char>(count * 4)), out(n, std::vector<char>(outCount * 4, 'x'));
  for (int r = 0; r < n; ++r)
    for (size_t j = 0; j < count; ++j) reinterpret_cast<int32_t*>(in[r].data())[j] = value(r, j);
  Tasks tasks = makeTasks(s, n, seq, ticket, {nullptr, nullptr, count, t, ReduceOp::kSum, false, kind, root}, in, out);
  const std::string what = std::string(collectiveName(kind)) + " N=" + std::to_string(n) + " count " +
                           std::to_string(count) + " root " + std::to_string(root);
  for (const Status& st : drive(tasks)) ASSERT_TRUE(st.isOk()) << what << ": " << st.toString();
  for (int r = 0; r < n; ++r)
    for (size_t j = 0; j < outCount; ++j) {
      const int32_t want = gather ? value(static_cast<int>(j / count), j % count) : value(root, j);
      ASSERT_EQ(reinterpret_cast<const int32_t*>(out[r].data())[j], want) << what << " rank " << r << " element " << j;
    }
}

TEST(ShmStagedCollective, AllgatherAndBroadcastMoveEveryElementAcrossChunkBoundaries) {
  const size_t e = perStage(DataType::kI32);
  for (int n : {2, 3, 5}) {
    Segment s(n);
    uint64_t ticket = 0;
    uint32_t seq = 0;
    for (size_t count : {size_t{1}, e - 1, e + 1, 3 * e + 7}) {
      runMove(s, n, seq++, &ticket, CollectiveKind::kAllgather, count, -1);
      for (int root : {0, n - 1}) runMove(s, n, seq++, &ticket, CollectiveKind::kBroadcast, count, root);
    }
  }
}

// In place: allgather's input is the rank's block of its output; broadcast's root has one
// buffer, and the other ranks give no input at all.
TEST(ShmStagedCollective, InPlaceAllgatherAndBroadcast) {
  const int n = 3;
  Segment s(n);
  const size_t count = 2 * perStage(DataType::kF32) + 9;
  std::vector<std::vector<float>> gathered(n, std::vector<float>(n * count)), sent(n, std::vector<float>(count));
  Tasks tasks;
  for (int r = 0; r < n; ++r) {
    for (size_t j = 0; j < count; ++j) gathered[r][r * count + j] = static_cast<float>(r * 10 + j % 5);
    ShmCollectiveArgs a{
        gathered[r].data() + r * count, gathered[r].data(), count, DataType::kF32, ReduceOp::kSum, false,
        CollectiveKind::kAllgather};
    s.board.announce(r, 0, ShmRoute::kStaged, ShmBoardCollective::callOf(a));
    tasks.push_back(std::make_unique<ShmStagedCollective>(s.staging, s.board, RunIdentity{r, 0, 0}, 0, a));
  }
  const uint64_t next = ShmStagedLayout(CollectiveKind::kAllgather, count, DataType::kF32, n, -1).chunks();
  for (size_t j = 0; j < count; ++j) sent[1][j] = 7.5f + static_cast<float>(j);
  for (int r = 0; r < n; ++r) {  // then a broadcast from rank 1, in place there
    float* data = sent[r].data();
    ShmCollectiveArgs a{r == 1 ? data : nullptr,    data, count, DataType::kF32, ReduceOp::kSum, false,
                        CollectiveKind::kBroadcast, 1};
    s.board.announce(r, 1, ShmRoute::kStaged, ShmBoardCollective::callOf(a));
    tasks.push_back(std::make_unique<ShmStagedCollective>(s.staging, s.board, RunIdentity{r, 0, 1}, next, a));
  }
  for (const Status& st : drive(tasks)) ASSERT_TRUE(st.isOk()) << st.toString();
  for (int r = 0; r < n; ++r) {
    for (size_t j = 0; j < n * count; ++j)
      ASSERT_EQ(gathered[r][j], static_cast<float>(static_cast<int>(j / count) * 10 + (j % count) % 5))
          << "allgather, rank " << r << " element " << j;
    for (size_t j = 0; j < count; ++j)
      ASSERT_EQ(sent[r][j], 7.5f + static_cast<float>(j)) << "broadcast, rank " << r << " element " << j;
  }
}

// An allreduce, a reduce_scatter, an allgather and a broadcast, all started on every rank
// before any finishes: each takes its tickets in turn and the stages pass from one to the next.
TEST(ShmStagedCollective, DifferentCollectivesShareTheStagesInTurn) {
  const int n = 4;
  Segment s(n);
  const size_t count = perStage(DataType::kF32) + 11;  // two chunks each, five for reduce_scatter (N = 4)
  const CollectiveKind kinds[] = {CollectiveKind::kAllreduce, CollectiveKind::kReduceScatter,
                                  CollectiveKind::kAllgather, CollectiveKind::kBroadcast};
  std::vector<std::vector<float>> in(4 * n, std::vector<float>(n * count)), out = in;
  Tasks tasks;
  uint64_t ticket = 0;
  for (int k = 0; k < 4; ++k) {
    ShmCollectiveArgs args{nullptr, nullptr, count, DataType::kF32, ReduceOp::kSum, false, kinds[k], k == 3 ? 2 : -1};
    for (int r = 0; r < n; ++r) {
      std::fill(in[k * n + r].begin(), in[k * n + r].end(), static_cast<float>(r + 1));
      ShmCollectiveArgs mine = args;
      mine.input = in[k * n + r].data();
      mine.output = out[k * n + r].data();
      s.board.announce(r, k, ShmRoute::kStaged, ShmBoardCollective::callOf(mine));
      tasks.push_back(
          std::make_unique<ShmStagedCollective>(s.staging, s.board, RunIdentity{r, 0, uint32_t(k)}, ticket, mine));
    }
    ticket += ShmStagedCollective::layoutOf(args, n).chunks();
  }
  EXPECT_EQ(ticket, 2u + 5u + 2u + 2u);
  for (const Status& st : drive(tasks)) ASSERT_TRUE(st.isOk()) << st.toString();
  for (int r = 0; r < n; ++r) {
    for (size_t j = 0; j < count; ++j) {
      ASSERT_EQ(out[0 * n + r][j], 10.0f) << "allreduce, rank " << r << " element " << j;
      ASSERT_EQ(out[1 * n + r][j], 10.0f) << "reduce_scatter, rank " << r << " element " << j;
      ASSERT_EQ(out[3 * n + r][j], 3.0f) << "broadcast from rank 2, rank " << r << " element " << j;
    }
    for (size_t j = 0; j < n * count; ++j)
      ASSERT_EQ(out[2 * n + r][j], static_cast<float>(j / count + 1)) << "allgather, rank " << r << " element " << j;
  }
}

Status runPair(ShmCollectiveArgs a0, ShmCollectiveArgs a1, Status* other) {
  Segment s(2);
  std::vector<float> in(3 * kShmStageBytes), out0(in.size()), out1(in.size());
  a0.input = a1.input = in.data();
  a0.output = out0.data();
  a1.output = out1.data();
  Tasks tasks;
  tasks.push_back(std::make_unique<ShmStagedCollective>(s.staging, s.board, RunIdentity{0, 0, 4}, 0, a0));
  tasks.push_back(std::make_unique<ShmStagedCollective>(s.staging, s.board, RunIdentity{1, 0, 4}, 0, a1));
  auto st = drive(tasks);
  *other = st[1];
  return st[0];
}

TEST(ShmStagedCollective, ADifferentRootOrCollectiveIsNamedOnBothRanks) {
  ShmCollectiveArgs b0{nullptr, nullptr, 1000, DataType::kF32, ReduceOp::kSum, false, CollectiveKind::kBroadcast, 0};
  ShmCollectiveArgs b1 = b0;
  b1.root = 1;
  Status st1, st0 = runPair(b0, b1, &st1);
  expectMismatchNaming({st0, st1}, {"root differs", "root=0"});
  ShmCollectiveArgs g = b0;
  g.collective = CollectiveKind::kAllgather;
  g.root = -1;
  st0 = runPair(g, b0, &st1);
  expectMismatchNaming({st0, st1}, {"collective differs", "allgather(count=1000"});
}

// Rank 0 names itself root, ranks 1..3 name rank 1: every rank is told, the three that agree
// with each other too (they read rank 1's stage alone, yet wait for every rank's post).
TEST(ShmStagedCollective, ADifferentRootIsNamedOnEveryRank) {
  const int n = 4;
  Segment s(n);
  std::vector<float> in(3 * kShmStageBytes);
  std::vector<std::vector<float>> out(n, std::vector<float>(in.size()));
  Tasks tasks;
  for (int r = 0; r < n; ++r) {
    ShmCollectiveArgs a{
        in.data(),     out[r].data(), 100000, DataType::kF32, ReduceOp::kSum, false, CollectiveKind::kBroadcast,
        r == 0 ? 0 : 1};
    tasks.push_back(std::make_unique<ShmStagedCollective>(s.staging, s.board, RunIdentity{r, 0, 4}, 0, a));
  }
  expectMismatchNaming(drive(tasks), {"root differs", "root=0", "root=1"});
}

// Pure layout: every input element is posted once by its owner, and every output element is
// written exactly once (by the reduction or a gather).
TEST(ShmStagedLayout, PiecesCoverEveryElementOnce) {
  for (CollectiveKind kind : {CollectiveKind::kAllreduce, CollectiveKind::kReduceScatter, CollectiveKind::kAllgather,
                              CollectiveKind::kBroadcast})
    for (int n : {1, 2, 3, 6})
      for (size_t count : {size_t{1}, size_t{65535}, size_t{65536}, size_t{200001}}) {
        const int root = kind == CollectiveKind::kBroadcast ? n - 1 : -1;
        ShmStagedLayout layout(kind, count, DataType::kF32, n, root);
        const size_t inCount = kind == CollectiveKind::kReduceScatter ? n * count : count;
        const size_t outCount = kind == CollectiveKind::kAllgather ? n * count : count;
        const std::string what =
            std::string(collectiveName(kind)) + " N=" + std::to_string(n) + " count " + std::to_string(count);
        for (int r = 0; r < n; ++r) {
          std::vector<int> posted(inCount), written(outCount);
          for (uint64_t c = 0; c < layout.chunks(); ++c) {
            for (int i = 0; i < layout.posts(r); ++i) {
              ShmPiece p = layout.post(c, r, i);
              ASSERT_LE((p.stage + p.count) * 4, kShmStageBytes) << what;
              for (size_t j = 0; j < p.count; ++j) ++posted[p.buffer + j];
            }
            ShmPiece red = layout.reduce(c, r);
            for (size_t j = 0; j < red.count; ++j) ++written[red.buffer + j];
            for (int peer = 0; peer < n; ++peer) {
              ShmPiece g = layout.gather(c, r, peer);
              for (size_t j = 0; j < g.count; ++j) ++written[g.buffer + j];
            }
          }
          const int wantPosted = kind == CollectiveKind::kBroadcast && r != root ? 0 : 1;
          for (size_t j = 0; j < inCount; ++j)
            ASSERT_EQ(posted[j], wantPosted) << what << " rank " << r << " input " << j;
          for (size_t j = 0; j < outCount; ++j) ASSERT_EQ(written[j], 1) << what << " rank " << r << " output " << j;
        }
      }
}

TEST(ShmStagedLayout, BytesPublishedAndWhatItServes) {
  const size_t e = perStage(DataType::kF32);
  EXPECT_EQ(ShmStagedLayout(CollectiveKind::kAllreduce, 2 * e, DataType::kF32, 4, -1).bytesPublished(1),
            (2 * e + 2 * (e / 4)) * 4)
      << "its input, and its reduced slices";
  EXPECT_EQ(ShmStagedLayout(CollectiveKind::kReduceScatter, 100, DataType::kF32, 4, -1).bytesPublished(1), 400u * 4);
  EXPECT_EQ(ShmStagedLayout(CollectiveKind::kAllgather, 100, DataType::kF32, 4, -1).bytesPublished(1), 100u * 4);
  EXPECT_EQ(ShmStagedLayout(CollectiveKind::kBroadcast, 100, DataType::kF32, 4, 2).bytesPublished(2), 100u * 4);
  EXPECT_EQ(ShmStagedLayout(CollectiveKind::kBroadcast, 100, DataType::kF32, 4, 2).bytesPublished(1), 0u);
  EXPECT_TRUE(ShmStagedLayout::serves(CollectiveKind::kReduceScatter, DataType::kF64, int(kShmStageBytes / 8)));
  EXPECT_FALSE(ShmStagedLayout::serves(CollectiveKind::kReduceScatter, DataType::kF64, int(kShmStageBytes / 8) + 1))
      << "a block's piece would be empty";
  EXPECT_FALSE(ShmStagedLayout::serves(CollectiveKind::kBarrier, DataType::kF32, 4));
}

}  // namespace shm_staged_others_test
}  // namespace tsr::algorithms
