// Every collective, dtype and op, in-place and out-of-place, for N = 1..8 ranks as threads
// over real UCX. Results are checked against a float64 reference (exactly for integers).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "tests/support/collective_checks.h"
#include "tests/support/thread_world.h"
#include "tests/support/values.h"

namespace tsr {
namespace {

using runtime::Communicator;
using testing::inputValue;
using testing::loadValue;
using testing::storeValue;

constexpr auto& kTypes = reference::kAllTypes;

std::vector<size_t> countsFor(int n) {
  return {0, 1, static_cast<size_t>(n > 1 ? n - 1 : 2), static_cast<size_t>(n + 1), 1000};
}

std::string label(const char* what, DataType t, ReduceOp op, size_t count, bool inPlace, int rank) {
  return std::string(what) + " " + dataTypeName(t) + " " + reduceOpName(op) + " count " + std::to_string(count) +
         (inPlace ? " in-place" : " out-of-place") + " rank " + std::to_string(rank);
}

using testing::checkAllreduce;

// Where reduce-scatter writes its block: a separate buffer, the input buffer itself (output ==
// input: the block lands at its start), or this rank's own block of the input (MPI/NCCL style).
enum class RsOutput { kSeparate, kSameBuffer, kOwnBlock };

const char* rsOutputName(RsOutput where) {
  switch (where) {
    case RsOutput::kSeparate:
      return "out-of-place";
    case RsOutput::kSameBuffer:
      return "in-place (output == input)";
    case RsOutput::kOwnBlock:
      return "in-place (output == own block of input)";
  }
  return "?";
}

void checkReduceScatter(Communicator& comm, DataType t, ReduceOp op, size_t count,
                        RsOutput where = RsOutput::kSeparate) {
  size_t esize = dataTypeSize(t);
  int n = comm.size();
  std::vector<char> in(count * n * esize + 1), out(count * esize + 1);
  for (size_t j = 0; j < count * n; ++j) storeValue(in.data(), j, t, inputValue(comm.rank(), j, op));
  char* dst = where == RsOutput::kSeparate     ? out.data()
              : where == RsOutput::kSameBuffer ? in.data()
                                               : in.data() + comm.rank() * count * esize;
  std::string what = std::string("reduce_scatter ") + dataTypeName(t) + " " + reduceOpName(op) + " count " +
                     std::to_string(count) + " " + rsOutputName(where) + " rank " + std::to_string(comm.rank());
  auto req = comm.reduceScatter(in.data(), dst, count, t, op);
  ASSERT_TRUE(req.isOk()) << req.status().toString();
  Status st = req.value()->wait();
  ASSERT_TRUE(st.isOk()) << what << ": " << st.toString();
  for (size_t j = 0; j < count; ++j) {
    size_t global = comm.rank() * count + j;
    double want = testing::reduceReference(n, global, op, t);
    ASSERT_TRUE(testing::closeEnough(loadValue(dst, j, t), want, t))
        << what << " element " << j << ": got " << loadValue(dst, j, t) << " want " << want;
  }
}

void checkAllgather(Communicator& comm, DataType t, size_t count, bool inPlace) {
  size_t esize = dataTypeSize(t);
  int n = comm.size();
  std::vector<char> in(count * esize + 1), out(count * n * esize + 1);
  char* src = inPlace ? out.data() + comm.rank() * count * esize : in.data();
  for (size_t j = 0; j < count; ++j) storeValue(src, j, t, comm.rank() * 10.0 + (j % 5));
  auto req = comm.allgather(src, out.data(), count, t);
  ASSERT_TRUE(req.isOk()) << req.status().toString();
  ASSERT_TRUE(req.value()->wait().isOk());
  for (int r = 0; r < n; ++r)
    for (size_t j = 0; j < count; ++j)
      ASSERT_EQ(loadValue(out.data(), r * count + j, t), r * 10.0 + (j % 5))
          << label("allgather", t, ReduceOp::kSum, count, inPlace, comm.rank()) << " block " << r;
}

// In place (one buffer) or out of place: the root reads `input` and every rank's `output`
// gets it; the input buffers (the root's included) stay untouched.
void checkBroadcast(Communicator& comm, DataType t, size_t count, int root, bool inPlace = true) {
  size_t esize = dataTypeSize(t);
  const bool isRoot = comm.rank() == root;
  auto expected = [&](size_t j) { return static_cast<double>(j % 100) - 7.0; };
  std::vector<char> in(count * esize + 1), out(count * esize + 1);
  for (size_t j = 0; j < count; ++j) {
    storeValue(in.data(), j, t, isRoot ? expected(j) : -1.0);
    storeValue(out.data(), j, t, -2.0);
  }
  char* dst = inPlace ? in.data() : out.data();
  std::string what = "broadcast " + std::string(dataTypeName(t)) + " root " + std::to_string(root) + " count " +
                     std::to_string(count) + (inPlace ? " in-place" : " out-of-place") + " rank " +
                     std::to_string(comm.rank());
  auto req = comm.broadcast(in.data(), dst, count, t, root);
  ASSERT_TRUE(req.isOk()) << req.status().toString();
  Status st = req.value()->wait();
  ASSERT_TRUE(st.isOk()) << what << ": " << st.toString();
  for (size_t j = 0; j < count; ++j) ASSERT_EQ(loadValue(dst, j, t), expected(j)) << what << " element " << j;
  if (!inPlace) {
    for (size_t j = 0; j < count; ++j)
      ASSERT_EQ(loadValue(in.data(), j, t), isRoot ? expected(j) : -1.0) << what << ": input changed at " << j;
  }
}

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, AllreduceEveryTypeOpAndCount) {
  testing::runRanks(GetParam(), [](Communicator& comm) {
    for (DataType t : kTypes)
      for (ReduceOp op : reference::opsFor(t))
        for (size_t count : countsFor(comm.size()))
          for (bool inPlace : {false, true}) checkAllreduce(comm, t, op, count, inPlace);
  });
}

TEST_P(Collectives, AllreduceLargeBuffers) {
  testing::runRanks(GetParam(), [](Communicator& comm) {
    size_t big = (size_t{1} << 20) + 3;
    checkAllreduce(comm, DataType::kF32, ReduceOp::kSum, big, false);
    checkAllreduce(comm, DataType::kF32, ReduceOp::kAvg, big, true);
    checkAllreduce(comm, DataType::kI64, ReduceOp::kMax, big, false);
  });
}

TEST_P(Collectives, ReduceScatterAllgatherBroadcastBarrier) {
  testing::runRanks(GetParam(), [](Communicator& comm) {
    for (DataType t : kTypes) {
      for (ReduceOp op : reference::opsFor(t))
        for (size_t count : {size_t{0}, size_t{1}, size_t{257}}) checkReduceScatter(comm, t, op, count);
      for (size_t count : countsFor(comm.size()))
        for (bool inPlace : {false, true}) checkAllgather(comm, t, count, inPlace);
    }
    for (int root = 0; root < comm.size(); ++root)
      for (size_t count : {size_t{0}, size_t{1}, size_t{5000}}) checkBroadcast(comm, DataType::kF32, count, root);
    checkBroadcast(comm, DataType::kI64, (size_t{1} << 20) + 3, comm.size() - 1);
    checkBroadcast(comm, DataType::kF16, 333, 0);
    for (int i = 0; i < 5; ++i) {
      auto req = comm.barrier();
      ASSERT_TRUE(req.isOk());
      ASSERT_TRUE(req.value()->wait().isOk());
    }
  });
}

// Reduce-scatter with its output inside its input (either at the start or at this rank's own
// block), and broadcast out of place for every dtype and root.
TEST_P(Collectives, InPlaceReduceScatterAndOutOfPlaceBroadcastEveryType) {
  testing::runRanks(GetParam(), [](Communicator& comm) {
    for (DataType t : kTypes) {
      for (ReduceOp op : reference::opsFor(t))
        for (size_t count : {size_t{1}, size_t{257}})
          for (RsOutput where : {RsOutput::kSameBuffer, RsOutput::kOwnBlock})
            checkReduceScatter(comm, t, op, count, where);
      for (int root = 0; root < comm.size(); ++root)
        for (size_t count : {size_t{0}, size_t{1}, size_t{3001}}) checkBroadcast(comm, t, count, root, false);
    }
    // A large in-place reduce-scatter: several chunks per block, so the ring reads input
    // blocks long after the first chunks of the result could have been written.
    checkReduceScatter(comm, DataType::kF32, ReduceOp::kSum, (size_t{1} << 18) + 5, RsOutput::kSameBuffer);
    checkReduceScatter(comm, DataType::kI64, ReduceOp::kMax, (size_t{1} << 17) + 3, RsOutput::kOwnBlock);
    checkBroadcast(comm, DataType::kF64, (size_t{1} << 18) + 1, comm.size() / 2, false);
  });
}

TEST_P(Collectives, ManyOutstandingRequestsCompleteInOrder) {
  testing::runRanks(GetParam(), [](Communicator& comm) {
    constexpr int kInFlight = 16;
    std::vector<std::vector<int32_t>> bufs(kInFlight, std::vector<int32_t>(4099));
    std::vector<runtime::RequestPtr> reqs;
    for (int i = 0; i < kInFlight; ++i) {
      for (auto& v : bufs[i]) v = comm.rank() + i;
      auto req = comm.allreduce(bufs[i].data(), bufs[i].data(), bufs[i].size(), DataType::kI32, ReduceOp::kSum);
      ASSERT_TRUE(req.isOk());
      reqs.push_back(req.take());
    }
    int n = comm.size();
    for (int i = 0; i < kInFlight; ++i) {
      ASSERT_TRUE(reqs[i]->wait().isOk());
      EXPECT_EQ(bufs[i][4098], n * (n - 1) / 2 + n * i);
    }
  });
}

// Overlap: a posted allreduce finishes while the caller computes (sleeps) without ever calling
// test or wait: the communicator's progress thread drives it, so the first test() afterwards
// reports it done, and it had completed before that call.
TEST(Overlap, ProgressThreadFinishesAllreduceWithoutTestOrWait) {
  testing::runRanks(4, [](Communicator& comm) {
    const size_t count = size_t{1} << 18;  // 1 MiB of f32: several chunks per ring step
    std::vector<float> in(count, static_cast<float>(comm.rank() + 1)), out(count, 0.0f);
    auto req = comm.allreduce(in.data(), out.data(), count, DataType::kF32, ReduceOp::kSum);
    ASSERT_TRUE(req.isOk()) << req.status().toString();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // "compute"; no test/wait
    auto beforeTest = std::chrono::steady_clock::now();
    Status st = req.value()->test();
    ASSERT_NE(st.code(), Code::kInProgress) << "rank " << comm.rank() << ": not done after 300 ms";
    ASSERT_TRUE(st.isOk()) << st.toString();
    EXPECT_LE(req.value()->completedAt(), beforeTest);
    for (size_t j = 0; j < count; j += 4097) ASSERT_EQ(out[j], 10.0f) << j;
    EXPECT_EQ(out[count - 1], 10.0f);
  });
}

// TSR_ALGO=torus: the 2D torus where the job has a shape (4 = 2x2, 6 = 3x2, 8 = 4x2), the cost
// model's next choice where it has none (5 and 7 are prime): results exact either way.
class TorusCollectives : public ::testing::TestWithParam<int> {};

TEST_P(TorusCollectives, AllreduceEveryTypeOpAndCount) {
  testing::runRanks(GetParam(),
                    [](Communicator& comm) {
                      EXPECT_EQ(comm.torusGrid().empty(), comm.size() == 5 || comm.size() == 7) << comm.size();
                      for (DataType t : kTypes)
                        for (ReduceOp op : reference::opsFor(t))
                          for (size_t count : countsFor(comm.size())) checkAllreduce(comm, t, op, count, true);
                      checkAllreduce(comm, DataType::kF32, ReduceOp::kAvg, (size_t{1} << 20) + 3, false);
                      auto req = comm.allreduce(nullptr, nullptr, 0, DataType::kF32, ReduceOp::kSum);
                      ASSERT_TRUE(req.isOk());
                      ASSERT_TRUE(req.value()->wait().isOk());
                      // Without a torus shape the cost model's next choice serves.
                      EXPECT_EQ(req.value()->algorithm(),
                                comm.torusGrid().empty() ? comm.selector().allreduceOrder(0).at(1) : "torus");
                    },
                    {{"TSR_ALGO", "torus"}});
}

INSTANTIATE_TEST_SUITE_P(Ranks, TorusCollectives, ::testing::Values(4, 5, 6, 8),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

// The edges here (1, 2, a non-power of two, the largest), the rest in the full tier.
INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(1, 2, 3, 8),
                         [](const auto& info) { return "N" + std::to_string(info.param); });
INSTANTIATE_TEST_SUITE_P(FullRanks, Collectives, ::testing::Values(4, 5, 6, 7),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

}  // namespace
}  // namespace tsr
