// Dense algorithm selection over real UCX (ranks as threads): every algorithm TSR_ALGO can
// force computes exact results for every dtype, op and awkward count; the cost model's choice
// follows the configured links; the probe leaves every rank with the same link model.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <vector>

#include "runtime/scratch_pool.h"
#include "tests/support/collective_checks.h"
#include "tests/support/thread_world.h"
#include "tests/support/values.h"
#include "transport/tests/tcp_sockets.h"

namespace tsr {
namespace {

using runtime::Communicator;
using testing::inputValue;
using testing::loadValue;
using testing::storeValue;

constexpr auto& kTypes = reference::kAllTypes;

struct Forced {
  int ranks;
  const char* algo;
};

class ForcedAlgorithms : public ::testing::TestWithParam<Forced> {};

TEST_P(ForcedAlgorithms, AllreduceEveryTypeOpAndCount) {
  auto [n, algo] = GetParam();
  testing::runRanks(
      n,
      [algo = std::string(algo)](Communicator& comm) {
        int size = comm.size();
        // hier needs a grid (4 = 2x2, 6 = 3x2 on one host); without one the next choice serves.
        bool serves = algo != "hier" || !comm.torusGrid().empty();
        // N = 2, 3, 5 have no grid: hier must fall back there (and only there).
        if (algo == "hier") {
          EXPECT_EQ(serves, size != 2 && size != 3 && size != 5) << size;
        }
        for (DataType t : kTypes)
          for (ReduceOp op : reference::opsFor(t))
            for (size_t count :
                 {size_t{0}, size_t{1}, static_cast<size_t>(size - 1), static_cast<size_t>(size + 1), size_t{1000}}) {
              std::string used = testing::checkAllreduce(comm, t, op, count, count % 2 == 0);
              if (serves) {
                EXPECT_EQ(used, algo);
              } else {
                EXPECT_NE(used, algo);
              }
            }
        EXPECT_EQ(testing::checkAllreduce(comm, DataType::kF32, ReduceOp::kAvg, (size_t{1} << 20) + 3, true),
                  serves ? algo : comm.selector().allreduceOrder(4 << 20).at(1));
      },
      {{"TSR_ALGO", algo}});
}

// Each algorithm at a power of two and a non-power of two here, every N from 2 to 6 in the
// full tier.
INSTANTIATE_TEST_SUITE_P(Ranks, ForcedAlgorithms,
                         ::testing::Values(Forced{4, "rabenseifner"}, Forced{5, "rabenseifner"}, Forced{2, "hier"},
                                           Forced{6, "hier"}, Forced{4, "doubling"}, Forced{3, "doubling"},
                                           Forced{2, "ring"}, Forced{5, "ring"}),
                         [](const auto& info) {
                           return std::string(info.param.algo) + "N" + std::to_string(info.param.ranks);
                         });
INSTANTIATE_TEST_SUITE_P(FullRanks, ForcedAlgorithms,
                         ::testing::Values(Forced{2, "rabenseifner"}, Forced{3, "rabenseifner"},
                                           Forced{6, "rabenseifner"}, Forced{4, "hier"}, Forced{5, "hier"},
                                           Forced{3, "hier"}, Forced{2, "doubling"}, Forced{5, "doubling"},
                                           Forced{6, "doubling"}, Forced{3, "ring"}, Forced{4, "ring"},
                                           Forced{6, "ring"}),
                         [](const auto& info) {
                           return std::string(info.param.algo) + "N" + std::to_string(info.param.ranks);
                         });

// TSR_ALGO=ring / bruck for all-gather: every dtype at counts 0, 1, N-1, N+1 and f32 at
// 2^20+3 per rank, in place (input = own block of the output) and out of place.
class ForcedAllgather : public ::testing::TestWithParam<Forced> {};

TEST_P(ForcedAllgather, EveryTypeAndCountInPlaceAndOut) {
  auto [n, algo] = GetParam();
  testing::runRanks(
      n,
      [algo = std::string(algo)](Communicator& comm) {
        int size = comm.size();
        auto value = [](int rank, size_t j) { return rank * 13.0 + static_cast<double>(j % 11); };
        auto check = [&](DataType t, size_t count, bool inPlace) {
          size_t esize = dataTypeSize(t);
          std::vector<char> in(count * esize + 1), out((count * size + 1) * esize);
          char* src = inPlace ? out.data() + comm.rank() * count * esize : in.data();
          for (size_t j = 0; j < count; ++j) storeValue(src, j, t, value(comm.rank(), j));
          storeValue(out.data(), count * size, t, 77);
          std::string what = std::string(dataTypeName(t)) + " count " + std::to_string(count) +
                             (inPlace ? " in-place" : " out-of-place") + " rank " + std::to_string(comm.rank());
          auto req = comm.allgather(src, out.data(), count, t);
          ASSERT_TRUE(req.isOk()) << what << ": " << req.status().toString();
          Status st = req.value()->wait();
          ASSERT_TRUE(st.isOk()) << what << ": " << st.toString();
          EXPECT_EQ(req.value()->algorithm(), algo) << what;
          size_t step = count > 1000 ? 991 : 1;
          for (int r = 0; r < size; ++r) {
            for (size_t j = 0; j < count; j += step)
              ASSERT_EQ(loadValue(out.data(), r * count + j, t), value(r, j))
                  << what << " block " << r << " element " << j;
            if (count > 0) {
              ASSERT_EQ(loadValue(out.data(), r * count + count - 1, t), value(r, count - 1)) << what << " block " << r;
            }
          }
          ASSERT_EQ(loadValue(out.data(), count * size, t), 77) << what << ": wrote past the end";
        };
        for (DataType t : kTypes)
          for (size_t count : {size_t{0}, size_t{1}, static_cast<size_t>(size - 1), static_cast<size_t>(size + 1)})
            for (bool inPlace : {false, true}) check(t, count, inPlace);
        for (bool inPlace : {false, true}) check(DataType::kF32, (size_t{1} << 20) + 3, inPlace);
      },
      {{"TSR_ALGO", algo}});
}

INSTANTIATE_TEST_SUITE_P(Ranks, ForcedAllgather,
                         ::testing::Values(Forced{2, "ring"}, Forced{4, "ring"}, Forced{6, "ring"}, Forced{2, "bruck"},
                                           Forced{4, "bruck"}, Forced{6, "bruck"}),
                         [](const auto& info) {
                           return std::string(info.param.algo) + "N" + std::to_string(info.param.ranks);
                         });

TEST(Selection, BruckAllgatherEveryTypeInPlaceAndOut) {
  for (int n : {3, 5}) {
    testing::runRanks(n,
                      [](Communicator& comm) {
                        int size = comm.size();
                        for (DataType t : kTypes)
                          for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}})
                            for (bool inPlace : {false, true}) {
                              size_t esize = dataTypeSize(t);
                              std::vector<char> in(count * esize + 1), out(count * size * esize + 1);
                              char* src = inPlace ? out.data() + comm.rank() * count * esize : in.data();
                              for (size_t j = 0; j < count; ++j) storeValue(src, j, t, comm.rank() * 10.0 + (j % 5));
                              auto req = comm.allgather(src, out.data(), count, t);
                              ASSERT_TRUE(req.isOk()) << req.status().toString();
                              ASSERT_TRUE(req.value()->wait().isOk());
                              EXPECT_EQ(req.value()->algorithm(), "bruck");
                              for (int r = 0; r < size; ++r)
                                for (size_t j = 0; j < count; ++j)
                                  ASSERT_EQ(loadValue(out.data(), r * count + j, t), r * 10.0 + (j % 5))
                                      << dataTypeName(t) << " count " << count << " block " << r;
                            }
                        // TSR_ALGO=bruck names no allreduce: allreduce takes the cost model's choice.
                        EXPECT_EQ(testing::checkAllreduce(comm, DataType::kI32, ReduceOp::kSum, 100, false),
                                  comm.selector().allreduceOrder(400).front());
                      },
                      {{"TSR_ALGO", "bruck"}});
  }
}

// Links given in full (no probe): a latency-bound small allreduce on 6 ranks takes recursive
// doubling's 4 steps (Rabenseifner 6, the ring 10), a large one the ring (the fold would move
// the buffer twice).
TEST(Selection, TheCostModelFollowsTheConfiguredLinks) {
  testing::runRanks(6,
                    [](Communicator& comm) {
                      EXPECT_DOUBLE_EQ(comm.selector().links().host.latencySec, 20e-6);
                      EXPECT_DOUBLE_EQ(comm.selector().links().host.bytesPerSec, 1e9);
                      EXPECT_EQ(comm.selector().allreduceOrder(8).front(), "doubling");
                      EXPECT_EQ(comm.selector().allreduceOrder(size_t{16} << 20).front(), "ring");
                      // On one host the shared-memory segment serves host allreduces before the cost model is
                      // asked: the board tiny ones, the stages the rest.
                      EXPECT_EQ(testing::checkAllreduce(comm, DataType::kF32, ReduceOp::kSum, 2, false), "shm");
                      EXPECT_EQ(testing::checkAllreduce(comm, DataType::kF32, ReduceOp::kSum, 4 << 20, false),
                                "shm-staged");
                    },
                    {{"TSR_LINK_BW", "1GB"}, {"TSR_LINK_LAT", "20us"}});
}

// A network rate in TSR_LINK_BW also sizes UCX's TCP send buffer (transport/ucx_context.h) on
// the connection a ring allreduce opens; the kernel doubles what is asked. These two ranks
// share a host and UCX_TLS leaves them TCP over loopback, so a slow rate's size is raised to
// loopback's 64 KiB (TSR_ERR_MODE=peer does the same with UCX's shared memory available).
void expectSendBufferForRate(const char* rate, int kernelBytes, std::map<std::string, std::string> settings = {},
                             const char* tls = "tcp,self") {
  transport::testing::ScopedEnv tlsEnv("UCX_TLS", tls), devices("UCX_NET_DEVICES", "lo"),
      unset("UCX_TCP_SNDBUF", nullptr);
  settings["TSR_LINK_BW"] = rate;
  settings["TSR_ALGO"] = "ring";
  testing::runRanks(
      2,
      [&](Communicator& comm) {
        EXPECT_EQ(testing::checkAllreduce(comm, DataType::kF32, ReduceOp::kSum, 1 << 18, false), "ring");
        ASSERT_TRUE(comm.barrier().take()->wait().isOk());  // both ends connected before either looks
        if (comm.rank() != 0) return;
        std::vector<int> sizes = transport::testing::tcpSendBuffers();
        EXPECT_GE(std::count(sizes.begin(), sizes.end(), kernelBytes), 2)
            << rate << ": " << ::testing::PrintToString(sizes);
        EXPECT_EQ(std::count(sizes.begin(), sizes.end(), 2 * 256 * 1024), 0) << ::testing::PrintToString(sizes);
      },
      settings);
}

TEST(Selection, AGivenNetworkRateSizesTheTcpSendBuffer) { expectSendBufferForRate("net=4gbit", 2 * 128 * 1024); }

TEST(Selection, SameHostPeersOverTcpKeepLoopbacksSendBuffer) {
  expectSendBufferForRate("net=1gbit", 2 * 64 * 1024);  // the rate alone: 32 KiB
  expectSendBufferForRate("net=100mbit", 2 * 64 * 1024, {{"TSR_ERR_MODE", "peer"}}, "tcp,self,sm");
}

// The probe runs when the links are not configured; every rank must end with the very same
// model, or ranks would choose different algorithms for one collective.
TEST(Selection, ProbedLinksAreTheSameOnEveryRank) {
  testing::runRanks(3, [](Communicator& comm) {
    const auto& host = comm.selector().links().host;
    EXPECT_GT(host.latencySec, 0);
    EXPECT_LT(host.latencySec, 0.1);
    EXPECT_GT(host.bytesPerSec, 1e6);
    EXPECT_NE(host.bytesPerSec, algorithms::LinkModel{}.host.bytesPerSec) << "not probed";
    double mine[2] = {host.latencySec, host.bytesPerSec};
    std::vector<double> all(2 * comm.size());
    auto req = comm.allgather(mine, all.data(), 2, DataType::kF64);
    ASSERT_TRUE(req.isOk());
    ASSERT_TRUE(req.value()->wait().isOk());
    for (int r = 0; r < comm.size(); ++r)
      EXPECT_EQ(std::memcmp(&all[2 * r], mine, sizeof mine), 0) << "rank " << r << " differs";
  });
}

}  // namespace
}  // namespace tsr

namespace tsr {
namespace {

// Mismatched counts can make ranks choose different algorithms (rank 1 the ring, the others
// recursive doubling): every rank must still get TSR_ERR_MISMATCH, not a timeout.
TEST(Selection, MismatchAcrossAlgorithmsIsStillAMismatch) {
  testing::runRanks(6,
                    [](Communicator& comm) {
                      size_t count = comm.rank() == 1 ? (4 << 20) : 2;
                      std::vector<float> in(count), out(count);
                      EXPECT_EQ(comm.selector().allreduceOrder(count * 4).front(),
                                comm.rank() == 1 ? "ring" : "doubling");
                      auto t0 = std::chrono::steady_clock::now();
                      auto req = comm.allreduce(in.data(), out.data(), count, DataType::kF32, ReduceOp::kSum);
                      ASSERT_TRUE(req.isOk());
                      Status st = req.value()->wait();
                      EXPECT_EQ(st.code(), Code::kMismatch) << "rank " << comm.rank() << ": " << st.toString();
                      EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
                    },
                    {{"TSR_LINK_BW", "1GB"}, {"TSR_LINK_LAT", "20us"}, {"TSR_TIMEOUT_MS", "15000"}});
}

}  // namespace
}  // namespace tsr

namespace tsr {
namespace {

// Collectives' scratch is UCX-registered memory, allocated once and reused step after step.
TEST(Scratch, RegisteredOnceAndReused) {
  testing::runRanks(3,
                    [](Communicator& comm) {
                      EXPECT_EQ(comm.scratchPool().memoryName(), "ucp_mem_map");
                      std::vector<float> in(1 << 18, 1.0f), out(1 << 18);
                      for (int step = 0; step < 20; ++step) {
                        auto req = comm.allreduce(in.data(), out.data(), in.size(), DataType::kF32, ReduceOp::kSum);
                        ASSERT_TRUE(req.isOk());
                        ASSERT_TRUE(req.value()->wait().isOk());
                        ASSERT_EQ(out[12345], 3.0f);
                      }
                      // A request completes a moment before the progress thread lets go of its scratch, so the
                      // next call may take a second block; after that the two alternate (20 without reuse).
                      EXPECT_GE(comm.scratchPool().blocksAllocated(), 1u);
                      EXPECT_LE(comm.scratchPool().blocksAllocated(), 2u) << "scratch was not reused";
                    },
                    {{"TSR_ALGO", "ring"}});
}

// Small runs take their scratch with the executor's state, not from the pool (whose
// bookkeeping would cost a small collective more than its messages).
TEST(Scratch, SmallCollectivesLeaveThePoolAlone) {
  for (const char* algo : {"ring", "doubling", "rabenseifner"}) {
    testing::runRanks(3,
                      [&](Communicator& comm) {
                        std::vector<float> in(16, 2.0f), out(16);
                        for (int step = 0; step < 5; ++step) {
                          auto req = comm.allreduce(in.data(), out.data(), in.size(), DataType::kF32, ReduceOp::kSum);
                          ASSERT_TRUE(req.isOk());
                          ASSERT_TRUE(req.value()->wait().isOk()) << algo;
                          ASSERT_EQ(out[15], 6.0f) << algo;
                          EXPECT_EQ(req.value()->algorithm(), algo);
                        }
                        EXPECT_EQ(comm.scratchPool().blocksAllocated(), 0u) << algo;
                      },
                      {{"TSR_ALGO", algo}});
  }
}

}  // namespace
}  // namespace tsr
