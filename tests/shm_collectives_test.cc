// Collectives and barriers through the one-host shared-memory segment (runtime/communicator_shm.cc)
// with ranks as threads: which calls the board and the stages serve, that their results match
// the reference, that TSR_ALGO and multi-host jobs turn them off, and that the segment leaves no
// name behind, or fails cleanly when /dev/shm has no room.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/communicator.h"
#include "runtime/shm_segment.h"
#include "tests/support/collective_checks.h"
#include "tests/support/thread_world.h"

namespace tsr {
namespace {

using runtime::Communicator;

// Whether a POSIX shared-memory name ("/tsr-...") still exists. Only this test's own names are
// looked at: other tests running at the same time create and remove theirs.
bool nameExists(const std::string& name) { return std::filesystem::exists("/dev/shm" + name); }

TEST(ShmCollectives, TinyAllreducesUseTheBoardAndMatchTheReference) {
  testing::runRanks(4, [](Communicator& comm) {
    for (DataType t : reference::kAllTypes)
      for (ReduceOp op : reference::opsFor(t))
        for (size_t count : {size_t{1}, size_t{3}, size_t{5}, algorithms::kShmPayloadBytes / dataTypeSize(t)})
          for (bool inPlace : {false, true})
            ASSERT_EQ(testing::checkAllreduce(comm, t, op, count, inPlace), "shm")
                << dataTypeName(t) << " " << reduceOpName(op) << " count " << count;
    // One element past what the board carries goes through the stages.
    EXPECT_EQ(
        testing::checkAllreduce(comm, DataType::kF32, ReduceOp::kSum, algorithms::kShmPayloadBytes / 4 + 1, false),
        "shm-staged");
    EXPECT_NE(testing::checkAllreduce(comm, DataType::kF32, ReduceOp::kSum, 0, false), "shm");
  });
}

// Non-blocking: many posted before any wait, in place, then waited in reverse order.
TEST(ShmCollectives, ManyPostedAtOnceComeOutRight) {
  testing::runRanks(3, [](Communicator& comm) {
    const int kCalls = 12;
    std::vector<std::vector<int32_t>> bufs(kCalls, std::vector<int32_t>(7));
    std::vector<runtime::RequestPtr> reqs;
    for (int c = 0; c < kCalls; ++c) {
      for (int j = 0; j < 7; ++j) bufs[c][j] = c * 1000 + comm.rank() * 10 + j;
      auto r = comm.allreduce(bufs[c].data(), bufs[c].data(), 7, DataType::kI32, ReduceOp::kSum);
      ASSERT_TRUE(r.isOk()) << r.status().toString();
      reqs.push_back(r.take());
    }
    for (int c = kCalls - 1; c >= 0; --c) {
      ASSERT_TRUE(reqs[c]->wait().isOk()) << "call " << c;
      EXPECT_EQ(reqs[c]->algorithm(), "shm");
      for (int j = 0; j < 7; ++j) ASSERT_EQ(bufs[c][j], 3 * c * 1000 + 30 + 3 * j) << "call " << c;
    }
  });
}

TEST(ShmCollectives, BarrierWaitsForTheLastRank) {
  testing::runRanks(3, [](Communicator& comm) {
    auto t0 = std::chrono::steady_clock::now();
    if (comm.rank() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto req = comm.barrier();
    ASSERT_TRUE(req.isOk());
    ASSERT_TRUE(req.value()->wait().isOk());
    EXPECT_EQ(req.value()->algorithm(), "shm barrier");
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(290)) << "rank " << comm.rank();
  });
}

// No room for the segment (here a file-size limit, as a full /dev/shm would be): creation fails
// with the reason and the size and leaves no name, rather than a rank dying of SIGBUS later.
TEST(ShmCollectives, ASegmentWithoutRoomFailsCreationWithTheReason) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit limit{65536, 65536};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(3);
    auto created = runtime::ShmSegment::create(size_t{1} << 20);
    if (created.isOk()) _exit(1);
    const std::string& m = created.status().message();
    const size_t at = m.find("/tsr-");
    if (m.find("cannot reserve 1048576 bytes") == std::string::npos || at == std::string::npos) _exit(2);
    _exit(nameExists(m.substr(at, m.find(':', at) - at)) ? 4 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: created past the limit; 2: the error does not name the size and segment; 4: its name was left in /dev/shm";
}

TEST(ShmCollectives, TheSegmentNameIsGoneOnceEveryRankHasIt) {
  testing::runRanks(3, [&](Communicator& comm) {
    EXPECT_EQ(testing::checkAllreduce(comm, DataType::kF32, ReduceOp::kSum, 2, false), "shm");
    const std::string name = comm.shmSegmentName();
    EXPECT_EQ(name.rfind("/tsr-", 0), 0u) << "rank " << comm.rank() << ": " << name;
    EXPECT_FALSE(nameExists(name)) << "rank " << comm.rank() << ": " << name;
  });
}

TEST(ShmCollectives, ForcedAlgorithmsTurnTheBoardOff) {
  testing::runRanks(3,
                    [](Communicator& comm) {
                      EXPECT_EQ(testing::checkAllreduce(comm, DataType::kF32, ReduceOp::kSum, 2, false), "ring");
                      auto req = comm.barrier();
                      ASSERT_TRUE(req.isOk() && req.value()->wait().isOk());
                      EXPECT_NE(req.value()->algorithm(), "shm barrier");
                    },
                    {{"TSR_ALGO", "ring"}});
}

// Above the board's 4 KiB, allreduces go through the stages, by default and when forced;
// TSR_ALGO naming a message plan turns them off as it does the board.
TEST(ShmCollectives, LargeAllreducesGoThroughTheStages) {
  for (const char* algo : {"auto", "shm"})
    testing::runRanks(
        3,
        [](Communicator& comm) {
          EXPECT_EQ(testing::checkAllreduce(comm, DataType::kF32, ReduceOp::kSum, 2, false), "shm");
          const size_t count = algorithms::kShmPayloadBytes / 4 + 1;
          EXPECT_EQ(testing::checkAllreduce(comm, DataType::kF32, ReduceOp::kSum, count, false), "shm-staged");
          EXPECT_EQ(testing::checkAllreduce(comm, DataType::kF64, ReduceOp::kAvg, (size_t{1} << 20) + 3, true),
                    "shm-staged");
        },
        {{"TSR_ALGO", algo}});
  testing::runRanks(3,
                    [](Communicator& comm) {
                      EXPECT_EQ(testing::checkAllreduce(comm, DataType::kF32, ReduceOp::kSum, 100000, false), "ring");
                    },
                    {{"TSR_ALGO", "ring"}});
}

// reduce_scatter, allgather and broadcast go through the segment too: on the board when a
// rank's post fits a slot (reduce_scatter posts all N blocks), else through the stages (their
// results are checked for every N and dtype in collectives_test.cc); TSR_ALGO naming a plan
// turns that off.
TEST(ShmCollectives, ReduceScatterAllgatherAndBroadcastGoThroughTheSegment) {
  auto routes = [](Communicator& comm, size_t count) {
    const size_t n = static_cast<size_t>(comm.size());
    const float mine = static_cast<float>(comm.rank() + 1);
    std::vector<float> in(count * n, mine), scattered(count), gathered(count * n), sent(count);
    std::vector<runtime::RequestPtr> reqs;  // all three in flight at once
    reqs.push_back(comm.reduceScatter(in.data(), scattered.data(), count, DataType::kF32, ReduceOp::kSum).take());
    reqs.push_back(comm.allgather(in.data(), gathered.data(), count, DataType::kF32).take());
    reqs.push_back(comm.broadcast(in.data(), sent.data(), count, DataType::kF32, 1).take());
    std::vector<std::string> names;
    for (auto& r : reqs) {
      EXPECT_TRUE(r->wait().isOk());
      names.push_back(r->algorithm());
    }
    for (size_t j : {size_t{0}, count - 1}) {
      EXPECT_EQ(scattered[j], static_cast<float>(n * (n + 1) / 2)) << "count " << count << " element " << j;
      EXPECT_EQ(sent[j], 2.0f) << "count " << count << " element " << j;
      for (size_t r = 0; r < n; ++r)
        EXPECT_EQ(gathered[r * count + j], static_cast<float>(r + 1)) << "count " << count << " block " << r;
    }
    return names;
  };
  const size_t slotFloats = algorithms::kShmPayloadBytes / sizeof(float);
  testing::runRanks(3, [&](Communicator& comm) {
    EXPECT_EQ(routes(comm, slotFloats / 3), (std::vector<std::string>{"shm", "shm", "shm"}));
    EXPECT_EQ(routes(comm, slotFloats), (std::vector<std::string>{"shm-staged", "shm", "shm"}));
    const size_t chunks = 70000;  // over one chunk each (reduce_scatter: several)
    EXPECT_EQ(routes(comm, chunks), (std::vector<std::string>{"shm-staged", "shm-staged", "shm-staged"}));
  });
  testing::runRanks(3,
                    [&](Communicator& comm) {
                      for (size_t count : {size_t{10}, size_t{70000}})
                        for (const std::string& name : routes(comm, count))
                          EXPECT_EQ(name.rfind("shm", 0), std::string::npos);
                    },
                    {{"TSR_ALGO", "ring"}});
}

// Ranks that count as different hosts share no memory: no board, messages instead.
TEST(ShmCollectives, NoBoardAcrossHosts) {
  testing::runRanksEach(
      4,
      [](Communicator& comm) {
        EXPECT_NE(testing::checkAllreduce(comm, DataType::kF32, ReduceOp::kSum, 2, false), "shm");
      },
      [](int rank) {
        return testing::Settings{{"TSR_TEST_HOST_ID", std::to_string(rank / 2)}};
      });
}

// Rank 1 calls with a count above the board's limit (messages), the others below it (the
// board): every rank reports the mismatch, none waits for the timeout.
TEST(ShmCollectives, ACallerOnAnotherRouteIsAMismatchEverywhere) {
  testing::runRanks(4,
                    [](Communicator& comm) {
                      size_t count = comm.rank() == 1 ? algorithms::kShmPayloadBytes / 4 + 1 : 2;
                      std::vector<float> in(count, 1.0f), out(count);
                      auto t0 = std::chrono::steady_clock::now();
                      auto req = comm.allreduce(in.data(), out.data(), count, DataType::kF32, ReduceOp::kSum);
                      ASSERT_TRUE(req.isOk());
                      Status st = req.value()->wait();
                      EXPECT_EQ(st.code(), Code::kMismatch) << "rank " << comm.rank() << ": " << st.toString();
                      EXPECT_NE(st.message().find("count"), std::string::npos) << st.message();
                      EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
                    },
                    {{"TSR_TIMEOUT_MS", "15000"}});
}

// One rank forces recursive doubling (messages), the others let the board serve: the board's
// announcements make it a mismatch on every rank, with the likely cause named.
// On the board (2 elements) and in the stages (100000): the rank that took messages is named.
TEST(ShmCollectives, ARankWithAnotherTsrAlgoIsNamed) {
  auto settings = [](int rank) {
    testing::Settings s{{"TSR_TIMEOUT_MS", "15000"}};
    if (rank == 1) s["TSR_ALGO"] = "doubling";
    return s;
  };
  for (size_t count : {size_t{2}, size_t{100000}}) {
    testing::runRanksEach(
        3,
        [count](Communicator& comm) {
          std::vector<float> in(count, 1.0f), out(count);
          auto t0 = std::chrono::steady_clock::now();
          auto req = comm.allreduce(in.data(), out.data(), count, DataType::kF32, ReduceOp::kSum);
          ASSERT_TRUE(req.isOk());
          Status st = req.value()->wait();
          EXPECT_EQ(st.code(), Code::kMismatch)
              << "rank " << comm.rank() << " count " << count << ": " << st.toString();
          EXPECT_NE(st.message().find("TSR_ALGO"), std::string::npos) << st.message();
          EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
        },
        settings);
  }
}

// The same for an allgather: rank 1 runs the ring, the others the stages.
TEST(ShmCollectives, AnAllgatherRankWithAnotherTsrAlgoIsNamed) {
  testing::runRanksEach(
      3,
      [](Communicator& comm) {
        const size_t count = 50000;
        std::vector<float> in(count, 1.0f), out(3 * count);
        auto t0 = std::chrono::steady_clock::now();
        auto req = comm.allgather(in.data(), out.data(), count, DataType::kF32);
        ASSERT_TRUE(req.isOk());
        Status st = req.value()->wait();
        EXPECT_EQ(st.code(), Code::kMismatch) << "rank " << comm.rank() << ": " << st.toString();
        EXPECT_NE(st.message().find("TSR_ALGO"), std::string::npos) << st.message();
        EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
      },
      [](int rank) {
        testing::Settings s{{"TSR_TIMEOUT_MS", "15000"}};
        if (rank == 1) s["TSR_ALGO"] = "ring";
        return s;
      });
}

}  // namespace
}  // namespace tsr
