// Who drives a communicator: a caller blocked in wait() drives it itself (TSR_CALLER_PROGRESS=1,
// the default), the progress thread parks meanwhile and takes over for non-blocking work.
// And how a rank waits (TSR_WAIT): polling, or sleeping on UCX's events, which needs every
// peer's messages to raise one: TCP (TSR_ERR_MODE=peer keeps UCX's shared memory out here).
// Ranks as threads over real UCX.
#include <gtest/gtest.h>

#include <atomic>

#include <time.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/support/thread_world.h"

namespace tsr {
namespace {

using runtime::Communicator;

// (TSR_CALLER_PROGRESS, how ranks wait)
using Mode = std::tuple<const char*, const char*>;
class CallerProgress : public ::testing::TestWithParam<Mode> {
 protected:
  std::map<std::string, std::string> settings(std::map<std::string, std::string> extra = {}) const {
    extra["TSR_CALLER_PROGRESS"] = std::get<0>(GetParam());
    if (std::string(std::get<1>(GetParam())) == "sleep") {
      extra["TSR_WAIT"] = "sleep";
      extra["TSR_ERR_MODE"] = "peer";  // TCP between the ranks: every message wakes a sleeper
    } else {
      extra["TSR_WAIT"] = "spin";
    }
    return extra;
  }
};

// Many small blocking collectives back to back (the latency path), both ways of driving.
TEST_P(CallerProgress, BackToBackBlockingCollectivesAreExact) {
  testing::runRanks(
      4,
      [](Communicator& comm) {
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
      },
      settings());
}

// Right after a blocking wait the progress thread is parked; a non-blocking collective posted
// then must still finish with no test or wait (overlap with computation).
TEST_P(CallerProgress, NonBlockingAfterABlockingWaitFinishesWithoutTestOrWait) {
  testing::runRanks(
      3,
      [](Communicator& comm) {
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
      },
      settings());
}

// Two threads of one rank wait at once on different collectives: one drives, the other
// waits its turn; both end with the right values.
TEST_P(CallerProgress, TwoThreadsWaitingAtOnce) {
  testing::runRanks(
      4,
      [](Communicator& comm) {
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
      },
      settings());
}

// A rank that destroys its communicator while the others wait for it in a collective: they
// fail at once with the rank named (its goodbye comes after its last message), not after
// the timeout (60 s here).
TEST_P(CallerProgress, PeerThatLeavesFailsTheCollectivesWaitingForIt) {
  testing::runRanks(
      3,
      [](Communicator& comm) {
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
      },
      settings({{"TSR_TIMEOUT_MS", "60000"}}));
}

INSTANTIATE_TEST_SUITE_P(Modes, CallerProgress,
                         ::testing::Combine(::testing::Values("1", "0"), ::testing::Values("spin", "sleep")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)[0] == '1' ? "Caller" : "ThreadOnly") +
                                  (std::string(std::get<1>(info.param)) == "sleep" ? "Sleeping" : "Spinning");
                         });

double threadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The point of sleeping: ranks that wait for a late peer leave the cores alone (on a shared
// machine, to the ranks that have work). TSR_WAIT=auto picks it when no peer shares UCX's
// shared memory; the waiting callers then use a few percent of a core, not all of it.
TEST(WaitMode, RanksWaitingForALatePeerSleep) {
  testing::runRanks(3,
                    [](Communicator& comm) {
                      if (comm.rank() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(600));
                      std::vector<float> in(1024, 1.0f), out(1024, 0.0f);
                      auto start = std::chrono::steady_clock::now();
                      double cpu0 = threadCpuSeconds();
                      auto req = comm.allreduce(in.data(), out.data(), in.size(), DataType::kF32, ReduceOp::kSum);
                      ASSERT_TRUE(req.isOk()) << req.status().toString();
                      ASSERT_TRUE(req.value()->wait().isOk());
                      double cpu = threadCpuSeconds() - cpu0;
                      double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                      EXPECT_EQ(out[1023], 3.0f);
                      if (comm.rank() != 2) {
                        ASSERT_GT(wall, 0.3) << "rank " << comm.rank() << " did not wait for rank 2";
                        EXPECT_LT(cpu, 0.25 * wall)
                            << "rank " << comm.rank() << " used " << cpu << " s of CPU in a " << wall << " s wait";
                      }
                    },
                    {{"TSR_WAIT", "auto"}, {"TSR_ERR_MODE", "peer"}});
}

// This process's progress threads (named "tsr-progress"): how many, and their voluntary
// context switches.
struct ProgressThreads {
  int threads = 0;
  long switches = 0;
};
ProgressThreads progressThreads() {
  ProgressThreads seen;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name != "tsr-progress") continue;
    ++seen.threads;
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) seen.switches += std::stol(line.substr(24));
  }
  return seen;
}

// While a caller drives a long wait (ranks that sleep while waiting: TCP between them), its
// progress thread stays parked and checks back ever less often (it used to every millisecond: ~1000 context switches a
// second per rank, on cores the ranks share); afterwards it takes over non-blocking work again.
TEST(CallerProgressParking, ProgressThreadsStayParkedThroughALongWait) {
  std::atomic<long> before{0}, during{0};
  std::atomic<int> threads{0};
  testing::runRanks(3,
                    [&](Communicator& comm) {
                      auto b = comm.barrier();
                      ASSERT_TRUE(b.isOk() && b.value()->wait().isOk());
                      if (comm.rank() == 0) {
                        ProgressThreads seen = progressThreads();
                        threads = seen.threads;
                        before = seen.switches;
                      }
                      if (comm.rank() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(500));
                      int32_t in = comm.rank(), out = 0;
                      auto req = comm.allreduce(&in, &out, 1, DataType::kI32, ReduceOp::kSum);
                      ASSERT_TRUE(req.isOk() && req.value()->wait().isOk());
                      EXPECT_EQ(out, 3);
                      if (comm.rank() == 0) during = progressThreads().switches - before;
                      // Non-blocking work right after the long wait still finishes with no test or wait.
                      std::vector<float> x(size_t{1} << 16, 1.0f), y(x.size(), 0.0f);
                      auto next = comm.allreduce(x.data(), y.data(), x.size(), DataType::kF32, ReduceOp::kSum);
                      ASSERT_TRUE(next.isOk()) << next.status().toString();
                      std::this_thread::sleep_for(std::chrono::milliseconds(300));
                      Status st = next.value()->test();
                      ASSERT_TRUE(st.isOk()) << "rank " << comm.rank() << ": " << st.toString();
                      EXPECT_EQ(y[x.size() - 1], 3.0f);
                    },
                    {{"TSR_CALLER_PROGRESS", "1"}, {"TSR_WAIT", "sleep"}, {"TSR_ERR_MODE", "peer"}});
  // Two ranks waited ~0.5 s each: 1 ms check-backs would be ~1000 switches; the third rank's
  // idle thread sleeps on events in 100 ms turns.
  // One progress thread per rank. (They may not have switched at all yet when counted: a
  // count of 0 there is not an error; it once failed CI as "no thread named tsr-progress".)
  EXPECT_EQ(threads.load(), 3) << "progress threads named tsr-progress";
  EXPECT_LT(during.load(), 150) << "progress threads woke " << during.load() << " times in a 0.5 s wait";
}

// Forced to sleep where messages raise no event (UCX's shared memory between ranks on one
// host): slower, as the sleeps run out their slice, but still exact and finished.
TEST(WaitMode, SleepingOverSharedMemoryStillFinishes) {
  testing::runRanks(3,
                    [](Communicator& comm) {
                      const size_t count = size_t{1} << 16;
                      std::vector<int32_t> in(count, comm.rank() + 1), out(count, 0);
                      for (int i = 0; i < 5; ++i) {
                        auto req = comm.allreduce(in.data(), out.data(), count, DataType::kI32, ReduceOp::kSum);
                        ASSERT_TRUE(req.isOk()) << req.status().toString();
                        ASSERT_TRUE(req.value()->wait().isOk());
                        ASSERT_EQ(out[0], 6);
                        ASSERT_EQ(out[count - 1], 6);
                      }
                    },
                    {{"TSR_WAIT", "sleep"}});
}

}  // namespace
}  // namespace tsr
