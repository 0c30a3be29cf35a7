// Marsit with the packing pipelined into the bit plan (pack=chunked, the default) over real UCX:
// bit for bit the results of packing the whole vector first (pack=whole), for N = 2..7 on the
// ring and 4, 6 on the torus, counts that are not multiples of 64, small chunks (so blocks are
// cut into chunks at odd word boundaries), over steps that carry the compensation and end in a
// full-precision step. A NaN in a chunk packed late still fails every rank naming the first bad
// element, with the tensor and compensation unchanged.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/marsit/marsit.h"
#include "tests/support/thread_world.h"

namespace tsr::marsit {
namespace {

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
    testing::runRanks(n, [&](runtime::Communicator& comm) {
      int me = comm.rank();
      std::map<std::string, std::string> params{{"seed", "11"}, {"topology", topology}, {"full_precision_every", "3"}};
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
    }, {{"TSR_CHUNK_BYTES", "1024"}});
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(mismatches[r], 0) << "rank " << r << " d " << d << " steps (mask) " << differingSteps[r];
  }
}

INSTANTIATE_TEST_SUITE_P(N, MarsitPipelined,
                         ::testing::Values(Shape{2, "ring"}, Shape{3, "ring"}, Shape{4, "ring"},
                                           Shape{5, "ring"}, Shape{6, "ring"}, Shape{7, "ring"},
                                           Shape{4, "torus"}, Shape{6, "torus"}),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return std::string(info.param.topology) + std::to_string(info.param.n);
                         });

// Rank 1 of 3 packs block 0 (which it sends first), then block 2, then block 1: a NaN in
// block 2 is found before the earlier one in block 1, and the error still names the earlier.
TEST(MarsitPipelined, NanInALatePackedChunkFailsEveryRankNamingTheFirstBadElement) {
  const size_t d = 64 * 300;  // 300 words: blocks of 100 words, elements 6400 and 12800 start 1 and 2
  testing::runRanks(3, [&](runtime::Communicator& comm) {
    auto t = MarsitTensor::create(comm, "layer9", d, {});
    ASSERT_TRUE(t.isOk());
    std::vector<float> g(d);
    for (size_t j = 0; j < d; ++j) g[j] = inputOf(comm.rank(), j, 0);
    if (comm.rank() == 1) g[7000] = std::nanf(""), g[13000] = -INFINITY;
    const std::vector<float> before = g;
    Status st = t.value()->allreduce(g.data());
    EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
    EXPECT_NE(st.message().find("layer9"), std::string::npos) << st.message();
    if (comm.rank() == 1) EXPECT_NE(st.message().find("element 7000 is nan"), std::string::npos) << st.message();
    EXPECT_TRUE(sameBits(g, before));
    EXPECT_TRUE(sameBits(t.value()->compensation(), std::vector<float>(d, 0.0f)));
    EXPECT_EQ(t.value()->step(), 0u);
    // The next clean step works and packs from the same state.
    for (size_t j = 0; j < d; ++j) g[j] = inputOf(comm.rank(), j, 1);
    EXPECT_TRUE(t.value()->allreduce(g.data()).isOk());
  }, {{"TSR_CHUNK_BYTES", "1024"}});
}

}  // namespace
}  // namespace tsr::marsit
