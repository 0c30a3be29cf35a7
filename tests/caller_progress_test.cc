// Who drives a communicator: a caller blocked in wait() drives it itself (TSR_CALLER_PROGRESS=1,
// the default), the progress thread parks meanwhile and takes over for non-blocking work.
// Ranks as threads over real UCX.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "tests/support/thread_world.h"

namespace tsr {
namespace {

using runtime::Communicator;

class CallerProgress : public ::testing::TestWithParam<const char*> {};

// Many small blocking collectives back to back (the latency path), both ways of driving.
TEST_P(CallerProgress, BackToBackBlockingCollectivesAreExact) {
  testing::runRanks(4, [](Communicator& comm) {
    for (int i = 0; i < 300; ++i) {
      int64_t mine[2] = {comm.rank() + i, 1}, sum[2] = {0, 0};
      auto req = comm.allreduce(mine, sum, 2, DataType::kI64, ReduceOp::kSum);
      ASSERT_TRUE(req.isOk()) << req.status().toString();
      ASSERT_TRUE(req.value()->wait().isOk());
      ASSERT_EQ(sum[0], 6 + 4 * i) << "iteration " << i << " rank " << comm.rank();
      ASSERT_EQ(sum[1], 4);
      if (i % 50 == 0) {
        auto b = comm.barrier();
        ASSERT_TRUE(b.isOk() && b.value()->wait().isOk());
      }
    }
  }, {{"TSR_CALLER_PROGRESS", GetParam()}});
}

// Right after a blocking wait the progress thread is parked; a non-blocking collective posted
// then must still finish with no test or wait (overlap with computation).
TEST_P(CallerProgress, NonBlockingAfterABlockingWaitFinishesWithoutTestOrWait) {
  testing::runRanks(3, [](Communicator& comm) {
    auto b = comm.barrier();
    ASSERT_TRUE(b.isOk() && b.value()->wait().isOk());
    const size_t count = size_t{1} << 18;  // several ring steps and chunks
    std::vector<float> in(count, 1.0f + comm.rank()), out(count, 0.0f);
    auto req = comm.allreduce(in.data(), out.data(), count, DataType::kF32, ReduceOp::kSum);
    ASSERT_TRUE(req.isOk()) << req.status().toString();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // "compute"
    auto beforeTest = std::chrono::steady_clock::now();
    Status st = req.value()->test();
    ASSERT_NE(st.code(), Code::kInProgress) << "rank " << comm.rank() << ": not done after 300 ms";
    ASSERT_TRUE(st.isOk()) << st.toString();
    EXPECT_LE(req.value()->completedAt(), beforeTest) << "rank " << comm.rank();
    EXPECT_EQ(out[0], 6.0f);
    EXPECT_EQ(out[count - 1], 6.0f);
  }, {{"TSR_CALLER_PROGRESS", GetParam()}});
}

// Two threads of one rank wait at once on different collectives: one drives, the other
// waits its turn; both end with the right values.
TEST_P(CallerProgress, TwoThreadsWaitingAtOnce) {
  testing::runRanks(4, [](Communicator& comm) {
    for (int round = 0; round < 20; ++round) {
      const size_t count = 4096 + round;
      std::vector<int32_t> a(count, comm.rank()), b(count, 2 * comm.rank()), ra(count), rb(count);
      auto qa = comm.allreduce(a.data(), ra.data(), count, DataType::kI32, ReduceOp::kSum);
      auto qb = comm.allreduce(b.data(), rb.data(), count, DataType::kI32, ReduceOp::kMax);
      ASSERT_TRUE(qa.isOk() && qb.isOk());
      Status sa, sb;
      std::thread other([&] { sb = qb.value()->wait(); });
      sa = qa.value()->wait();
      other.join();
      ASSERT_TRUE(sa.isOk()) << sa.toString();
      ASSERT_TRUE(sb.isOk()) << sb.toString();
      ASSERT_EQ(ra[count - 1], 6) << "round " << round;
      ASSERT_EQ(rb[0], 6) << "round " << round;
    }
  }, {{"TSR_CALLER_PROGRESS", GetParam()}});
}

// A rank that destroys its communicator while the others wait for it in a collective: they
// fail at once with the rank named (its goodbye comes after its last message), not after
// the timeout (60 s here).
TEST_P(CallerProgress, PeerThatLeavesFailsTheCollectivesWaitingForIt) {
  testing::runRanks(3, [](Communicator& comm) {
    if (comm.rank() == 2) {  // leaves cleanly (a goodbye) while the others wait for it
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      return;
    }
    auto start = std::chrono::steady_clock::now();
    int32_t in = 1, out = 0;
    auto req = comm.allreduce(&in, &out, 1, DataType::kI32, ReduceOp::kSum);
    Status st = req.isOk() ? req.value()->wait() : req.status();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(st.code(), Code::kPeerFailed) << st.toString();
    EXPECT_NE(st.message().find("rank 2"), std::string::npos) << st.toString();
    EXPECT_LT(seconds, 10.0) << st.toString();
  }, {{"TSR_CALLER_PROGRESS", GetParam()}, {"TSR_TIMEOUT_MS", "60000"}});
}

INSTANTIATE_TEST_SUITE_P(Modes, CallerProgress, ::testing::Values("1", "0"),
                         [](const auto& info) { return std::string(info.param[0] == '1' ? "Caller" : "ThreadOnly"); });

}  // namespace
}  // namespace tsr
