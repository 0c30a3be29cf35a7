// Every collective, dtype and op, in-place and out-of-place, for N = 1..8 ranks as threads
// over real UCX. Results are checked against a float64 reference (exactly for integers).
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/thread_world.h"
#include "tests/support/values.h"

namespace tsr {
namespace {

using runtime::Communicator;
using testing::inputValue;
using testing::loadValue;
using testing::storeValue;

constexpr DataType kTypes[] = {DataType::kF32, DataType::kF64, DataType::kF16,
                               DataType::kBF16, DataType::kI32, DataType::kI64};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax,
                             ReduceOp::kProd};

std::vector<size_t> countsFor(int n) {
  return {0, 1, static_cast<size_t>(n > 1 ? n - 1 : 2), static_cast<size_t>(n + 1), 1000};
}

std::string label(const char* what, DataType t, ReduceOp op, size_t count, bool inPlace, int rank) {
  return std::string(what) + " " + dataTypeName(t) + " " + reduceOpName(op) + " count " +
         std::to_string(count) + (inPlace ? " in-place" : " out-of-place") + " rank " +
         std::to_string(rank);
}

void checkAllreduce(Communicator& comm, DataType t, ReduceOp op, size_t count, bool inPlace) {
  size_t esize = dataTypeSize(t);
  std::vector<char> in(count * esize + 1), out(count * esize + 1);
  for (size_t j = 0; j < count; ++j) storeValue(in.data(), j, t, inputValue(comm.rank(), j, op));
  void* dst = inPlace ? in.data() : out.data();
  auto req = comm.allreduce(in.data(), dst, count, t, op);
  ASSERT_TRUE(req.isOk()) << req.status().toString();
  Status st = req.value()->wait();
  ASSERT_TRUE(st.isOk()) << label("allreduce", t, op, count, inPlace, comm.rank()) << ": " << st.toString();
  int bad = 0;
  for (size_t j = 0; j < count && bad < 3; ++j) {
    double want = testing::reduceReference(comm.size(), j, op, t);
    double got = loadValue(dst, j, t);
    if (!testing::closeEnough(got, want, t)) {
      ADD_FAILURE() << label("allreduce", t, op, count, inPlace, comm.rank()) << " element " << j
                    << ": got " << got << " want " << want;
      ++bad;
    }
  }
}

void checkReduceScatter(Communicator& comm, DataType t, ReduceOp op, size_t count) {
  size_t esize = dataTypeSize(t);
  int n = comm.size();
  std::vector<char> in(count * n * esize + 1), out(count * esize + 1);
  for (size_t j = 0; j < count * n; ++j) storeValue(in.data(), j, t, inputValue(comm.rank(), j, op));
  auto req = comm.reduceScatter(in.data(), out.data(), count, t, op);
  ASSERT_TRUE(req.isOk()) << req.status().toString();
  Status st = req.value()->wait();
  ASSERT_TRUE(st.isOk()) << label("reduce_scatter", t, op, count, false, comm.rank()) << st.toString();
  for (size_t j = 0; j < count; ++j) {
    size_t global = comm.rank() * count + j;
    double want = testing::reduceReference(n, global, op, t);
    ASSERT_TRUE(testing::closeEnough(loadValue(out.data(), j, t), want, t))
        << label("reduce_scatter", t, op, count, false, comm.rank()) << " element " << j;
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

void checkBroadcast(Communicator& comm, DataType t, size_t count, int root) {
  size_t esize = dataTypeSize(t);
  std::vector<char> buf(count * esize + 1);
  for (size_t j = 0; j < count; ++j)
    storeValue(buf.data(), j, t, comm.rank() == root ? static_cast<double>(j % 100) : -1.0);
  auto req = comm.broadcast(buf.data(), buf.data(), count, t, root);
  ASSERT_TRUE(req.isOk()) << req.status().toString();
  ASSERT_TRUE(req.value()->wait().isOk());
  for (size_t j = 0; j < count; ++j)
    ASSERT_EQ(loadValue(buf.data(), j, t), static_cast<double>(j % 100))
        << "broadcast root " << root << " count " << count << " rank " << comm.rank();
}

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, AllreduceEveryTypeOpAndCount) {
  testing::runRanks(GetParam(), [](Communicator& comm) {
    for (DataType t : kTypes)
      for (ReduceOp op : kOps)
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
      for (ReduceOp op : kOps)
        for (size_t count : {size_t{0}, size_t{1}, size_t{257}}) checkReduceScatter(comm, t, op, count);
      for (size_t count : countsFor(comm.size()))
        for (bool inPlace : {false, true}) checkAllgather(comm, t, count, inPlace);
    }
    for (int root = 0; root < comm.size(); ++root)
      for (size_t count : {size_t{0}, size_t{1}, size_t{5000}})
        checkBroadcast(comm, DataType::kF32, count, root);
    checkBroadcast(comm, DataType::kI64, (size_t{1} << 20) + 3, comm.size() - 1);
    checkBroadcast(comm, DataType::kF16, 333, 0);
    for (int i = 0; i < 5; ++i) {
      auto req = comm.barrier();
      ASSERT_TRUE(req.isOk());
      ASSERT_TRUE(req.value()->wait().isOk());
    }
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

// TSR_ALGO=torus: the 2D torus where the job has a shape (4 = 2x2, 6 = 3x2, 8 = 4x2), the cost
// model's next choice where it has none (5 and 7 are prime): results exact either way.
class TorusCollectives : public ::testing::TestWithParam<int> {};

TEST_P(TorusCollectives, AllreduceEveryTypeOpAndCount) {
  testing::runRanks(GetParam(), [](Communicator& comm) {
    EXPECT_EQ(comm.torusGrid().empty(), comm.size() == 5 || comm.size() == 7) << comm.size();
    for (DataType t : kTypes)
      for (ReduceOp op : kOps)
        for (size_t count : countsFor(comm.size())) checkAllreduce(comm, t, op, count, true);
    checkAllreduce(comm, DataType::kF32, ReduceOp::kAvg, (size_t{1} << 20) + 3, false);
    auto req = comm.allreduce(nullptr, nullptr, 0, DataType::kF32, ReduceOp::kSum);
    ASSERT_TRUE(req.isOk());
    ASSERT_TRUE(req.value()->wait().isOk());
    // Without a torus shape the cost model's next choice serves.
    EXPECT_EQ(req.value()->algorithm(),
              comm.torusGrid().empty() ? comm.selector().allreduceOrder(0).at(1) : "torus");
  }, {{"TSR_ALGO", "torus"}});
}

INSTANTIATE_TEST_SUITE_P(Ranks, TorusCollectives, ::testing::Values(4, 5, 6, 8),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(1, 2, 3, 4, 5, 7, 8),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

}  // namespace
}  // namespace tsr
