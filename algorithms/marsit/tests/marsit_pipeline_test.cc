// Marsit with the packing pipelined into the bit plan (pack=chunked, the default) over real UCX:
// bit for bit the results of packing the whole vector first (pack=whole), for N = 2..7 on the
// ring and 4, 6 on the torus, counts that are not multiples of 64, small chunks (so blocks are
// cut into chunks at odd word boundaries), over steps that carry the compensation and end in a
// full-precision step; the same for the two-level schedule (intra=none|fp16) on fake hosts,
// 2 hosts x 2 ranks and 3 hosts x 2 ranks. A NaN in a chunk packed late still fails every rank naming the first bad
// element, with the tensor and compensation unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/marsit/marsit.h"
#include "tests/support/thread_world.h"

namespace tsr::marsit {
namespace marsit_pipeline_test {  // named, not anonymous: the test binary is a unity build

float inputOf(int rank, size_t j, int step) {
  return std::sin(0.61f * static_cast<float>(j + 3) * static_cast<float>(rank + 1) + 0.7f * step) *
         (1.0f + 0.05f * rank);
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Shape {
  int n;
  const char* topology;
};

class MarsitPipelined : public ::testing::TestWithParam<Shape> {};

TEST_P(MarsitPipelined, ChunkedPackingGivesTheWholeVectorPackingsBits) {
  const int n = GetParam().n;
  const std::string topology = GetParam().topology;
  const int steps = 3;  // the third is full precision
  for (size_t d : {size_t{1000}, size_t{100003}}) {
    std::vector<int> mismatches(n, 0);
    std::vector<uint64_t> differingSteps(n, 0);
    testing::runRanks(
        n,
        [&](runtime::Communicator& comm) {
          int me = comm.rank();
          std::map<std::string, std::string> params{
              {"seed", "11"}, {"topology", topology}, {"full_precision_every", "3"}};
          auto chunked = MarsitTensor::create(comm, "chunked", d, params);
          params["pack"] = "whole";
          auto whole = MarsitTensor::create(comm, "whole", d, params);
          ASSERT_TRUE(chunked.isOk() && whole.isOk()) << chunked.status().toString() << whole.status().toString();
          for (int step = 0; step < steps; ++step) {
            std::vector<float> a(d), b;
            for (size_t j = 0; j < d; ++j) a[j] = inputOf(me, j, step);
            b = a;
            ASSERT_TRUE(chunked.value()->allreduce(a.data()).isOk());
            ASSERT_TRUE(whole.value()->allreduce(b.data()).isOk());
            if (!sameBits(a, b) || !sameBits(chunked.value()->compensation(), whole.value()->compensation())) {
              ++mismatches[me];
              differingSteps[me] |= 1u << step;
            }
          }
        },
        {{"TSR_CHUNK_BYTES", "1024"}});
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(mismatches[r], 0) << "rank " << r << " d " << d << " steps (mask) " << differingSteps[r];
  }
}

INSTANTIATE_TEST_SUITE_P(N, MarsitPipelined,
                         ::testing::Values(Shape{2, "ring"}, Shape{3, "ring"}, Shape{4, "ring"}, Shape{5, "ring"},
                                           Shape{6, "ring"}, Shape{7, "ring"}, Shape{4, "torus"}, Shape{6, "torus"}),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return std::string(info.param.topology) + std::to_string(info.param.n);
                         });

struct HierShape {
  int hosts;
  const char* intra;
};

class MarsitHierPipelined : public ::testing::TestWithParam<HierShape> {};

// Two ranks per host; rank r on fake host r % hosts, so a host's ranks are not neighbours.
TEST_P(MarsitHierPipelined, ChunkedPackingGivesTheWholeBlockPackingsBits) {
  const int hosts = GetParam().hosts, n = 2 * hosts;
  const std::string intra = GetParam().intra;
  const int steps = 4;  // the third is full precision, the fourth starts again from nothing kept
  for (size_t d : {size_t{1000}, size_t{3001}, size_t{100003}}) {
    std::vector<int> mismatches(n, 0);
    std::vector<uint64_t> differingSteps(n, 0);
    std::vector<std::vector<std::vector<int>>> grids(n);
    testing::runRanksEach(
        n,
        [&](runtime::Communicator& comm) {
          int me = comm.rank();
          grids[me] = comm.torusGrid();
          std::map<std::string, std::string> params{{"seed", "13"}, {"intra", intra}, {"full_precision_every", "3"}};
          auto chunked = MarsitTensor::create(comm, "chunked", d, params);
          params["pack"] = "whole";
          auto whole = MarsitTensor::create(comm, "whole", d, params);
          ASSERT_TRUE(chunked.isOk() && whole.isOk()) << chunked.status().toString() << whole.status().toString();
          ASSERT_EQ(chunked.value()->algorithm(), "marsit-2level");
          for (int step = 0; step < steps; ++step) {
            std::vector<float> a(d), b;
            for (size_t j = 0; j < d; ++j) a[j] = inputOf(me, j, step);
            b = a;
            ASSERT_TRUE(chunked.value()->allreduce(a.data()).isOk());
            ASSERT_TRUE(whole.value()->allreduce(b.data()).isOk());
            if (!sameBits(a, b) || !sameBits(chunked.value()->compensation(), whole.value()->compensation()) ||
                !sameBits(chunked.value()->intraResidual(), whole.value()->intraResidual())) {
              ++mismatches[me];
              differingSteps[me] |= 1u << step;
            }
          }
        },
        [&](int rank) {
          return testing::Settings{{"TSR_TEST_HOST_ID", "fake" + std::to_string(rank % hosts)},
                                   {"TSR_CHUNK_BYTES", "1024"}};
        });
    ASSERT_EQ(grids[0].size(), static_cast<size_t>(hosts)) << "rows are the fake hosts";
    for (const auto& row : grids[0]) {
      ASSERT_EQ(row.size(), 2u);
      for (int q : row) EXPECT_EQ(q % hosts, row[0] % hosts) << "a row holds one host's ranks";
    }
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(mismatches[r], 0) << "rank " << r << " d " << d << " steps (mask) " << differingSteps[r];
  }
}

INSTANTIATE_TEST_SUITE_P(Grids, MarsitHierPipelined,
                         ::testing::Values(HierShape{2, "none"}, HierShape{2, "fp16"}, HierShape{3, "none"},
                                           HierShape{3, "fp16"}),
                         [](const ::testing::TestParamInfo<HierShape>& info) {
                           return std::to_string(info.param.hosts) + "x2_" + info.param.intra;
                         });

// Two-level, 2 hosts x 2 ranks: each row block has two column blocks, and of the two ranks
// holding a row block, one packs its second half first. Every rank puts an Inf in the first
// half and a NaN in the second half of both row blocks: every rank fails naming the Inf.
TEST(MarsitHierPipelined, NanInALatePackedChunkFailsEveryRankNamingTheFirstBadElement) {
  const size_t d = 64 * 400;  // row blocks of 12800 elements, column blocks of 6400
  testing::runRanksEach(
      4,
      [&](runtime::Communicator& comm) {
        auto t = MarsitTensor::create(comm, "layer3", d, {{"intra", "none"}});
        ASSERT_TRUE(t.isOk()) << t.status().toString();
        const size_t mine = t.value()->shardOffset();
        std::vector<float> g(d);
        for (size_t j = 0; j < d; ++j) g[j] = inputOf(comm.rank(), j, 0);
        for (size_t off : {size_t{0}, size_t{12800}}) g[off + 1000] = INFINITY, g[off + 7000] = std::nanf("");
        const std::vector<float> before = g;
        Status st = t.value()->allreduce(g.data());
        EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
        EXPECT_NE(st.message().find("layer3"), std::string::npos) << st.message();
        EXPECT_NE(st.message().find("element " + std::to_string(mine + 1000) + " is inf"), std::string::npos)
            << st.message();
        EXPECT_TRUE(sameBits(g, before));
        EXPECT_TRUE(sameBits(t.value()->compensation(), std::vector<float>(d / 2, 0.0f)));
        EXPECT_EQ(t.value()->step(), 0u);
        for (size_t j = 0; j < d; ++j) g[j] = inputOf(comm.rank(), j, 1);
        EXPECT_TRUE(t.value()->allreduce(g.data()).isOk());
      },
      [](int rank) {
        return testing::Settings{{"TSR_TEST_HOST_ID", "fake" + std::to_string(rank % 2)}, {"TSR_CHUNK_BYTES", "1024"}};
      });
}

// Rank 1 of 3 packs block 0 (which it sends first), then block 2, then block 1: a NaN in
// block 2 is found before the earlier one in block 1, and the error still names the earlier.
TEST(MarsitPipelined, NanInALatePackedChunkFailsEveryRankNamingTheFirstBadElement) {
  const size_t d = 64 * 300;  // 300 words: blocks of 100 words, elements 6400 and 12800 start 1 and 2
  testing::runRanks(3,
                    [&](runtime::Communicator& comm) {
                      auto t = MarsitTensor::create(comm, "layer9", d, {});
                      ASSERT_TRUE(t.isOk());
                      std::vector<float> g(d);
                      for (size_t j = 0; j < d; ++j) g[j] = inputOf(comm.rank(), j, 0);
                      if (comm.rank() == 1) g[7000] = std::nanf(""), g[13000] = -INFINITY;
                      const std::vector<float> before = g;
                      Status st = t.value()->allreduce(g.data());
                      EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
                      EXPECT_NE(st.message().find("layer9"), std::string::npos) << st.message();
                      if (comm.rank() == 1) {
                        EXPECT_NE(st.message().find("element 7000 is nan"), std::string::npos) << st.message();
                      }
                      EXPECT_TRUE(sameBits(g, before));
                      EXPECT_TRUE(sameBits(t.value()->compensation(), std::vector<float>(d, 0.0f)));
                      EXPECT_EQ(t.value()->step(), 0u);
                      // The next clean step works and packs from the same state.
                      for (size_t j = 0; j < d; ++j) g[j] = inputOf(comm.rank(), j, 1);
                      EXPECT_TRUE(t.value()->allreduce(g.data()).isOk());
                    },
                    {{"TSR_CHUNK_BYTES", "1024"}});
}

}  // namespace marsit_pipeline_test
}  // namespace tsr::marsit
