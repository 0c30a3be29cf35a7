// Dense collectives on device buffers (TSR_MEM_CUDA), staged through pinned host memory, over
// real UCX (ranks as threads), with the host-memcpy fake copier standing in for CUDA (its
// copies happen only after some polls, as asynchronous ones would): every collective gives
// the host run's result, ranks on host and device buffers interwork, pinned buffers are
// reused, and bad buffers or failed copies are errors naming them. No GPU is involved.
#include <gtest/gtest.h>

#include <numeric>
#include <thread>

#include "algorithms/team/tests/fake_copier.h"
#include "runtime/communicator.h"
#include "runtime/dense_staging.h"
#include "tests/support/thread_world.h"

namespace tsr {
namespace {

using runtime::Communicator;
using testing::FakeCopier;
using testing::FakeCopierLog;

Status waitFor(Result<runtime::RequestPtr> posted) {
  if (!posted.isOk()) return posted.status();
  return posted.value()->wait();
}

std::shared_ptr<FakeCopierLog> useFakeDevice(Communicator& comm) {
  auto log = std::make_shared<FakeCopierLog>();
  EXPECT_TRUE(comm.useDeviceCopier(std::make_unique<FakeCopier>(log)).isOk());
  EXPECT_EQ(comm.bufferMemory(), transport::MemoryType::kCuda);
  return log;
}

class DenseDevice : public ::testing::TestWithParam<int> {};

TEST_P(DenseDevice, EveryCollectiveGivesTheHostResult) {
  const int n = GetParam();
  testing::runRanks(n, [n](Communicator& comm) {
    const int r = comm.rank();
    auto log = useFakeDevice(comm);
    for (size_t count : {size_t{1}, size_t{1000}, size_t{1} << 18}) {
      std::vector<float> x(count);
      for (size_t j = 0; j < count; ++j) x[j] = static_cast<float>((j % 13) + r);
      ASSERT_TRUE(waitFor(comm.allreduce(x.data(), x.data(), count, DataType::kF32, ReduceOp::kSum)).isOk());
      for (size_t j : {size_t{0}, count / 2, count - 1})
        ASSERT_EQ(x[j], static_cast<float>(n * (j % 13) + n * (n - 1) / 2)) << "count " << count << " j " << j;
      std::vector<int32_t> in(count, r * 10), out(count, -1);
      ASSERT_TRUE(waitFor(comm.allreduce(in.data(), out.data(), count, DataType::kI32, ReduceOp::kMax)).isOk());
      ASSERT_EQ(out[count - 1], (n - 1) * 10);
      ASSERT_EQ(in[0], r * 10) << "out of place: the input was written";
    }
    std::vector<double> mine(5, r + 0.5), all(5 * n, -1);
    ASSERT_TRUE(waitFor(comm.allgather(mine.data(), all.data(), 5, DataType::kF64)).isOk());
    for (int q = 0; q < n; ++q) ASSERT_EQ(all[q * 5 + 4], q + 0.5);
    std::vector<int64_t> blocks(3 * n), block(3, -1);
    std::iota(blocks.begin(), blocks.end(), int64_t{r});
    ASSERT_TRUE(waitFor(comm.reduceScatter(blocks.data(), block.data(), 3, DataType::kI64, ReduceOp::kSum)).isOk());
    ASSERT_EQ(block[2], int64_t{n} * (3 * r + 2) + int64_t{n} * (n - 1) / 2);
    std::vector<float> b(4097, r == n - 1 ? 7.0f : 0.0f);
    ASSERT_TRUE(waitFor(comm.broadcast(b.data(), b.data(), b.size(), DataType::kF32, n - 1)).isOk());
    ASSERT_EQ(b[4096], 7.0f);
    EXPECT_GT(log->toHost, 0);
    EXPECT_GT(log->toDevice, 0);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, DenseDevice, ::testing::Values(2, 3, 4));

// Host and device ranks run the same plan with the same messages; pinned buffers are reused.
TEST(DenseDeviceStaging, HostAndDeviceRanksInterworkAndPinnedBuffersAreReused) {
  testing::runRanks(3, [](Communicator& comm) {
    std::shared_ptr<FakeCopierLog> log;
    if (comm.rank() == 1) log = useFakeDevice(comm);
    std::vector<float> x(50000);
    for (int round = 0; round < 20; ++round) {
      std::fill(x.begin(), x.end(), static_cast<float>(comm.rank() + round));
      ASSERT_TRUE(waitFor(comm.allreduce(x.data(), x.data(), x.size(), DataType::kF32, ReduceOp::kSum)).isOk());
      ASSERT_EQ(x[49999], static_cast<float>(3 * round + 3)) << "round " << round;
    }
    if (log) {
      EXPECT_EQ(log->toHost, 20);
      EXPECT_EQ(log->toDevice, 20);
      EXPECT_EQ(log->pinnedLive, 1) << "pinned buffers were not reused";
    }
  });
}

// Pinned buffers are taken and freed on the posting thread, never on the progress thread
// (page-locked allocations and frees may wait for every stream, one the caller holds
// included): collectives in flight together, beyond what is kept, on both paths.
TEST(DenseDeviceStaging, PinnedMemoryIsTakenAndFreedOnThePostingThreadOnly) {
  for (const char* algo : {"auto", "ring"}) {
    testing::runRanks(2,
                      [](Communicator& comm) {
                        auto log = useFakeDevice(comm);
                        log->caller = std::this_thread::get_id();
                        // Three in flight hold more than is kept.
                        const size_t count = runtime::DenseStaging::kKeptPinnedBytes / sizeof(float) / 3 + 1024;
                        std::vector<std::vector<float>> x(3, std::vector<float>(count, 1.0f + comm.rank()));
                        for (int round = 0; round < 2; ++round) {
                          std::vector<runtime::RequestPtr> posted;
                          for (auto& v : x) {
                            auto r = comm.allreduce(v.data(), v.data(), count, DataType::kF32, ReduceOp::kSum);
                            ASSERT_TRUE(r.isOk()) << r.status().toString();
                            posted.push_back(r.take());
                          }
                          for (auto& r : posted) ASSERT_TRUE(r->wait().isOk());
                        }
                        EXPECT_EQ(x[2][count - 1], 6.0f) << "two rounds of a sum over 2 ranks of 1 and 2";
                        EXPECT_EQ(log->pinnedElsewhere.load(), 0)
                            << "pinned memory taken or freed off the posting thread";
                        EXPECT_LE(log->pinnedLive, 3);
                      },
                      {{"TSR_ALGO", algo}});
  }
}

// With the caller's stream set, every copy of an input waits for an event recorded on that
// stream in the call (shared-memory and plan paths alike); without, for the default stream. A
// stream the copier cannot record on fails the call before anything is sent, naming it.
TEST(DenseDeviceStaging, InputCopiesWaitForTheCallersStream) {
  for (const char* algo : {"auto", "ring"}) {
    testing::runRanks(
        2,
        [algo](Communicator& comm) {
          auto log = useFakeDevice(comm);
          void* stream = reinterpret_cast<void*>(uintptr_t{0x5eed0} + comm.rank());
          std::vector<float> x(3000, 1.0f);
          comm.setCallerStream(stream);
          ASSERT_TRUE(waitFor(comm.allreduce(x.data(), x.data(), x.size(), DataType::kF32, ReduceOp::kSum)).isOk());
          std::vector<float> all(2 * x.size());
          ASSERT_TRUE(waitFor(comm.allgather(x.data(), all.data(), x.size(), DataType::kF32)).isOk());
          comm.setCallerStream(nullptr);
          ASSERT_TRUE(waitFor(comm.allreduce(x.data(), x.data(), x.size(), DataType::kF32, ReduceOp::kSum)).isOk());
          EXPECT_EQ(x[2999], 4.0f);
          EXPECT_EQ(all[5999], 2.0f);
          EXPECT_EQ(log->waitedOn, (std::vector<void*>{stream, stream, nullptr})) << "TSR_ALGO=" << algo;
          log->badStream = stream;
          comm.setCallerStream(stream);
          Status st = waitFor(comm.allreduce(x.data(), x.data(), x.size(), DataType::kF32, ReduceOp::kSum));
          EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.toString();
          EXPECT_NE(st.message().find("rank " + std::to_string(comm.rank()) + ": allreduce: cannot record"),
                    std::string::npos)
              << st.toString();
          EXPECT_EQ(log->toHost, 3) << "the refused call copied";
          comm.setCallerStream(nullptr);
          ASSERT_TRUE(waitFor(comm.allreduce(x.data(), x.data(), x.size(), DataType::kF32, ReduceOp::kSum)).isOk())
              << "a refused call broke the communicator";
          EXPECT_EQ(x[2999], 8.0f);
        },
        {{"TSR_ALGO", algo}});
  }
}

// A thread's own setting (setThreadBuffers) reaches that thread's calls only: with the
// communicator on host memory, a second thread posts between the first thread's setting and
// its call, on host buffers, and is not staged; the first thread's call is, after its own
// stream; cleared, the communicator's setting holds for it again. The calls take turns (one
// order on every rank), the settings overlap.
TEST(DenseDeviceStaging, ThreadBuffersReachOnlyTheirThreadsCalls) {
  testing::runRanks(2, [](Communicator& comm) {
    auto log = useFakeDevice(comm);
    ASSERT_TRUE(comm.setBufferMemory(transport::MemoryType::kHost).isOk());  // the fake copier stays
    void* stream = reinterpret_cast<void*>(uintptr_t{0xcafe0} + comm.rank());
    ASSERT_TRUE(comm.setThreadBuffers(transport::MemoryType::kCuda, stream).isOk());
    EXPECT_EQ(comm.bufferMemory(), transport::MemoryType::kCuda);
    EXPECT_EQ(comm.callerStream(), stream);
    std::vector<float> other(2000, 1.0f), mine(3000, 2.0f);
    std::thread second([&] {
      EXPECT_EQ(comm.bufferMemory(), transport::MemoryType::kHost);
      EXPECT_EQ(comm.callerStream(), nullptr);
      EXPECT_TRUE(
          waitFor(comm.allreduce(other.data(), other.data(), other.size(), DataType::kF32, ReduceOp::kSum)).isOk());
    });
    second.join();
    EXPECT_EQ(log->toHost, 0) << "the other thread's host call was staged";
    ASSERT_TRUE(waitFor(comm.allreduce(mine.data(), mine.data(), mine.size(), DataType::kF32, ReduceOp::kSum)).isOk());
    EXPECT_EQ(log->waitedOn, std::vector<void*>{stream});
    comm.clearThreadBuffers();
    EXPECT_EQ(comm.bufferMemory(), transport::MemoryType::kHost);
    ASSERT_TRUE(waitFor(comm.allreduce(mine.data(), mine.data(), mine.size(), DataType::kF32, ReduceOp::kSum)).isOk());
    EXPECT_EQ(log->toHost, 1) << "a host call after clearing was staged";
    EXPECT_EQ(other[1999], 2.0f);
    EXPECT_EQ(mine[2999], 8.0f);
    EXPECT_EQ(comm.setThreadBuffers(static_cast<transport::MemoryType>(9), nullptr).code(), Code::kInvalidArgument);
  });
}

// A barrier has no buffers: it runs whatever the dense collectives' memory type (with TSR_MEM_CUDA
// set, its plan once took the device setting and failed for want of device kernels). Without
// the shared-memory board (TSR_ALGO=ring), so the barrier runs as a plan over UCX.
TEST(DenseDeviceStaging, BarrierRunsWhateverTheMemoryType) {
  testing::runRanks(
      3,
      [](Communicator& comm) {
        useFakeDevice(comm);
        std::vector<float> x(1000, 1.0f);
        ASSERT_TRUE(waitFor(comm.allreduce(x.data(), x.data(), x.size(), DataType::kF32, ReduceOp::kSum)).isOk());
        Status st = waitFor(comm.barrier());
        EXPECT_TRUE(st.isOk()) << st.message();
        EXPECT_EQ(x[999], 3.0f);
      },
      {{"TSR_ALGO", "ring"}});
}

// A buffer that is not device memory is refused before anything is sent, naming it; the
// communicator stays usable. A copy that fails fails the collective with the copier's message.
TEST(DenseDeviceStaging, BadBufferIsRefusedAndFailedCopyFailsTheCollective) {
  testing::runRanks(
      2,
      [](Communicator& comm) {
        auto log = useFakeDevice(comm);
        std::vector<float> in(100, 1.0f), out(100, 0.0f);
        log->rejected = out.data();
        Status st = waitFor(comm.allreduce(in.data(), out.data(), 100, DataType::kF32, ReduceOp::kSum));
        EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.toString();
        EXPECT_NE(st.message().find("allreduce: output (memory type CUDA)"), std::string::npos) << st.toString();
        EXPECT_NE(st.message().find("not CUDA device memory"), std::string::npos) << st.toString();
        log->rejected = nullptr;
        ASSERT_TRUE(waitFor(comm.allreduce(in.data(), out.data(), 100, DataType::kF32, ReduceOp::kSum)).isOk());
        EXPECT_EQ(out[99], 2.0f);
        log->failCopy = true;
        st = waitFor(comm.allreduce(in.data(), out.data(), 100, DataType::kF32, ReduceOp::kSum));
        EXPECT_FALSE(st.isOk());
        EXPECT_NE(st.message().find("fake copy failed"), std::string::npos) << st.toString();
        EXPECT_NE(st.message().find("allreduce on device buffers"), std::string::npos) << st.toString();
      },
      {{"TSR_TIMEOUT_MS", "10000"}});
}

// Without a usable CUDA device the setting is refused with the reason and stays host.
TEST(DenseDeviceStaging, CudaWithoutADeviceIsRefusedWithTheReason) {
  testing::runRanks(1, [](Communicator& comm) {
    Status st = comm.setBufferMemory(transport::MemoryType::kCuda);
    if (st.isOk()) GTEST_SKIP() << "a CUDA device is usable here";
    EXPECT_EQ(st.code(), Code::kNotSupported);
    EXPECT_NE(st.message().find("need a CUDA device"), std::string::npos) << st.toString();
    EXPECT_EQ(comm.bufferMemory(), transport::MemoryType::kHost);
  });
}

}  // namespace
}  // namespace tsr
