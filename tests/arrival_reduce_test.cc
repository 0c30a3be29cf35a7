// Ring reduce-scatters that reduce on arrival (TSR_ARRIVAL_REDUCE; algorithms/dense/dense_plans.h)
// through the communicator: chosen by the job's shape, exact against the reference, told apart
// when ranks disagree, failing cleanly when a peer goes. Ranks as threads over real UCX; fake
// hosts through TSR_TEST_HOST_ID.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/collective_checks.h"
#include "tests/support/thread_world.h"

namespace tsr {
namespace {

using runtime::Communicator;

testing::Settings onHost(int host, std::string arrival) {
  return {{"TSR_TEST_HOST_ID", "h" + std::to_string(host)},
          {"TSR_ARRIVAL_REDUCE", std::move(arrival)},
          {"TSR_ALGO", "ring"}};
}

// One rank per (fake) host: auto turns it on, and every dtype, op and count is exact.
TEST(ArrivalReduce, OneRankPerHostIsExactForEveryDtypeAndOp) {
  for (int n : {2, 3, 5}) {
    testing::runRanksEach(
        n,
        [&](Communicator& comm) {
          EXPECT_TRUE(comm.hostDenseOptions().reduceOnArrival) << "rank " << comm.rank();
          for (DataType t : reference::kAllTypes)
            for (ReduceOp op : reference::opsFor(t))
              for (size_t count : {size_t{1}, static_cast<size_t>(n + 1), size_t{70000}}) {
                std::string algo = testing::checkAllreduce(comm, t, op, count, count % 2 == 0);
                ASSERT_EQ(algo, "ring");
                if (::testing::Test::HasFailure()) return;
              }
          // reduce-scatter: block r of sum_r' (r' + 1) * (j + 1)
          const size_t count = 50000;
          std::vector<float> in(count * n), out(count);
          for (size_t j = 0; j < in.size(); ++j) in[j] = static_cast<float>((comm.rank() + 1) * (j % 97));
          auto req = comm.reduceScatter(in.data(), out.data(), count, DataType::kF32, ReduceOp::kSum);
          ASSERT_TRUE(req.isOk() && req.value()->wait().isOk());
          float ranks = static_cast<float>(n * (n + 1) / 2);
          for (size_t j = 0; j < count; j += 101)
            ASSERT_EQ(out[j], ranks * static_cast<float>((comm.rank() * count + j) % 97)) << "rank " << comm.rank();
        },
        [](int rank) { return onHost(rank, "auto"); });
  }
}

// Two ranks on one host: auto leaves it off; forced on, it still works over shared memory.
TEST(ArrivalReduce, SharedHostsAutoOffForcedOnStillExact) {
  for (std::string mode : {"auto", "on"}) {
    testing::runRanksEach(
        4,
        [&](Communicator& comm) {
          EXPECT_EQ(comm.hostDenseOptions().reduceOnArrival, mode == "on") << "rank " << comm.rank();
          testing::checkAllreduce(comm, DataType::kF32, ReduceOp::kSum, 300000, false);
          testing::checkAllreduce(comm, DataType::kI32, ReduceOp::kMax, 1000, true);
        },
        [&](int rank) { return onHost(rank / 2, mode); });
  }
}

// Ranks that disagree (one forced off) fail at once with the algorithm named, not at the
// timeout (60 s here).
TEST(ArrivalReduce, RanksThatDisagreeAreAMismatch) {
  testing::runRanksEach(
      3,
      [](Communicator& comm) {
        auto start = std::chrono::steady_clock::now();
        std::vector<float> in(100000, 1.0f), out(100000);
        auto req = comm.allreduce(in.data(), out.data(), in.size(), DataType::kF32, ReduceOp::kSum);
        Status st = req.isOk() ? req.value()->wait() : req.status();
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        EXPECT_EQ(st.code(), Code::kMismatch) << "rank " << comm.rank() << ": " << st.toString();
        EXPECT_NE(st.message().find("algorithm differs"), std::string::npos) << st.toString();
        EXPECT_NE(st.message().find("TSR_ARRIVAL_REDUCE"), std::string::npos) << st.toString();
        EXPECT_LT(seconds, 20.0);
      },
      [](int rank) {
        auto s = onHost(rank, rank == 1 ? "off" : "auto");
        s["TSR_TIMEOUT_MS"] = "60000";
        return s;
      });
}

}  // namespace
}  // namespace tsr
