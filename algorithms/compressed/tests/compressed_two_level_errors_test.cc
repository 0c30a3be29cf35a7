// Two-level CompressedTensor: what it refuses and how it fails. Ranks as threads over UCX on
// fake hosts (TSR_TEST_HOST_ID). Bad parameters and unusable host layouts fail at creation
// naming the key and value; NaN/Inf, an f16 cast that overflows, an f16 host sum that
// overflows and a host average the column's compressor cannot take fail the step on every rank
// with the tensor, its residual and its step unchanged; tensors too small to give every rank a
// shard still reduce.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "algorithms/compressed/compressed_tensor.h"
#include "tests/support/thread_world.h"

namespace tsr::compressed {
namespace {

testing::Settings onHost(const std::string& host) { return {{"TSR_TEST_HOST_ID", host}}; }
testing::Settings interleaved(int rank, int hosts) { return onHost("fake" + std::to_string(rank % hosts)); }

bool mentions(const Status& st, const std::string& text) { return st.message().find(text) != std::string::npos; }

TEST(TwoLevelErrors, BadParametersAreNamed) {
  testing::runRanksEach(
      4,
      [](runtime::Communicator& comm) {
        auto bogus =
            CompressedTensor::create(comm, "emb", 100, {{"intra", "bogus"}, {"compressor", "topk"}, {"k", "3"}});
        EXPECT_EQ(bogus.status().code(), Code::kInvalidArgument);
        EXPECT_TRUE(mentions(bogus.status(), "compressed tensor emb")) << bogus.status().message();
        EXPECT_TRUE(mentions(bogus.status(), "intra=bogus")) << bogus.status().message();
        EXPECT_TRUE(mentions(bogus.status(), "none or fp16")) << bogus.status().message();
        auto noK = CompressedTensor::create(comm, "emb", 100, {{"intra", "fp16"}, {"compressor", "topk"}});
        EXPECT_EQ(noK.status().code(), Code::kInvalidArgument);
        EXPECT_TRUE(mentions(noK.status(), "'k'") || mentions(noK.status(), "k=")) << noK.status().message();
        auto badK =
            CompressedTensor::create(comm, "emb", 100, {{"intra", "none"}, {"compressor", "topk"}, {"k", "-4"}});
        EXPECT_TRUE(mentions(badK.status(), "-4")) << badK.status().message();
      },
      [](int r) { return interleaved(r, 2); });
}

// 3 ranks on one host, 1 on the other: no uniform grid, refused naming both counts.
TEST(TwoLevelErrors, UnequalHostsAreRefused) {
  testing::runRanksEach(
      4,
      [](runtime::Communicator& comm) {
        auto t = CompressedTensor::create(comm, "w", 100, {{"intra", "fp16"}, {"compressor", "fp16"}});
        EXPECT_EQ(t.status().code(), Code::kNotSupported);
        EXPECT_TRUE(mentions(t.status(), "intra=fp16")) << t.status().message();
        EXPECT_TRUE(mentions(t.status(), "different numbers of ranks")) << t.status().message();
        EXPECT_TRUE(mentions(t.status(), "compressed tensor w")) << t.status().message();
      },
      [](int r) { return onHost(r < 3 ? "big" : "small"); });
}

// One rank per host: nothing to average inside a host.
TEST(TwoLevelErrors, OneRankPerHostIsRefused) {
  testing::runRanksEach(
      4,
      [](runtime::Communicator& comm) {
        auto t = CompressedTensor::create(comm, "w", 100, {{"intra", "none"}, {"compressor", "fp16"}});
        EXPECT_EQ(t.status().code(), Code::kNotSupported);
        EXPECT_TRUE(mentions(t.status(), "intra=none")) << t.status().message();
        EXPECT_TRUE(mentions(t.status(), "holds 1 rank(s)")) << t.status().message();
      },
      [](int r) { return interleaved(r, 4); });
}

// A good step (so the residual is not zero), then a failing one: every rank fails naming the
// tensor, and g, the residual and the step are as before; the next good step works.
void expectFailureLeavesStateAlone(const std::map<std::string, std::string>& params,
                                   const std::function<void(int rank, std::vector<float>&)>& spoil,
                                   const std::string& everywhere, const std::function<std::string(int)>& onRank) {
  const size_t d = 300;
  std::vector<std::vector<float>> after(4);
  testing::runRanksEach(
      4,
      [&](runtime::Communicator& comm) {
        const int me = comm.rank();
        auto t = CompressedTensor::create(comm, "layer7", d, params);
        ASSERT_TRUE(t.isOk()) << t.status().toString();
        std::vector<float> g(d), before(d), now(d);
        for (size_t j = 0; j < d; ++j) g[j] = std::cos(0.1f * j * (me + 1));
        ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
        t.value()->residual(before.data());
        bool nonzero = false;
        for (float v : before) nonzero |= v != 0.0f;
        EXPECT_TRUE(nonzero) << "the first step kept nothing back: the check below would prove nothing";
        for (size_t j = 0; j < d; ++j) g[j] = 0.5f + 0.001f * j;
        spoil(me, g);
        const std::vector<float> spoiled = g;
        Status st = t.value()->allreduce(g.data());
        EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
        EXPECT_TRUE(mentions(st, "layer7")) << st.message();
        EXPECT_TRUE(mentions(st, everywhere)) << st.message();
        if (!onRank(me).empty()) {
          EXPECT_TRUE(mentions(st, onRank(me))) << st.message();
        }
        EXPECT_EQ(std::memcmp(g.data(), spoiled.data(), d * sizeof(float)), 0) << "g changed";
        t.value()->residual(now.data());
        EXPECT_EQ(now, before) << "residual changed on rank " << me;
        EXPECT_EQ(t.value()->step(), 1u);
        for (size_t j = 0; j < d; ++j) g[j] = 0.25f * me;
        ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
        after[me] = g;
      },
      [](int r) { return interleaved(r, 2); });
  for (int r = 1; r < 4; ++r) EXPECT_EQ(after[r], after[0]) << "rank " << r;
}

TEST(TwoLevelErrors, NanFailsEveryRankAndChangesNothing) {
  expectFailureLeavesStateAlone(
      {{"intra", "fp16"}, {"compressor", "topk"}, {"k", "0.05"}},
      [](int rank, std::vector<float>& g) {
        if (rank == 1) g[42] = std::nanf("");
      },
      "1 rank(s) had NaN or Inf",
      [](int rank) { return rank == 1 ? std::string("element 42 is nan") : std::string(); });
}

TEST(TwoLevelErrors, F16CastOverflowFailsEveryRank) {
  expectFailureLeavesStateAlone(
      {{"intra", "fp16"}, {"compressor", "fp16"}},
      [](int rank, std::vector<float>& g) {
        if (rank == 0) g[5] = 1e5f;
      },
      "NaN or Inf",
      [](int rank) { return rank == 0 ? std::string("element 5 is 100000.000000, beyond f16") : std::string(); });
}

// Ranks 0 and 2 share a host; 40000 each fits f16, their sum does not.
TEST(TwoLevelErrors, F16HostSumOverflowFailsEveryRank) {
  expectFailureLeavesStateAlone(
      {{"intra", "fp16"}, {"compressor", "topk"}, {"k", "7"}},
      [](int rank, std::vector<float>& g) {
        if (rank % 2 == 0) g[7] = 40000.0f;
      },
      "overflowed f16", [](int) { return std::string(); });
}

// Ranks 0 and 2 share a host: their f32 average of 1e5 at element 5 has room, but the column's
// fp16 compressor cannot take it. Only the shard's owner compresses it: it failed there alone
// while the others waited out the timeout; the flag now carries it to every rank.
TEST(TwoLevelErrors, AHostAverageTheCompressorCannotTakeFailsEveryRank) {
  expectFailureLeavesStateAlone(
      {{"intra", "none"}, {"compressor", "fp16"}},
      [](int rank, std::vector<float>& g) {
        if (rank % 2 == 0) g[5] = 1e5f;
      },
      "held a value the compressor cannot take", [](int) { return std::string(); });
}

// ... and with intra=none the same values reduce (the f32 average has room).
TEST(TwoLevelErrors, F32HostSumHasRoom) {
  std::vector<std::vector<float>> out(4);
  testing::runRanksEach(
      4,
      [&](runtime::Communicator& comm) {
        auto t = CompressedTensor::create(comm, "x", 10, {{"intra", "none"}, {"compressor", "none"}});
        ASSERT_TRUE(t.isOk()) << t.status().toString();
        std::vector<float> g(10, 1.0f);
        if (comm.rank() % 2 == 0) g[7] = 40000.0f;
        ASSERT_TRUE(t.value()->allreduce(g.data()).isOk());
        out[comm.rank()] = g;
      },
      [](int r) { return interleaved(r, 2); });
  EXPECT_FLOAT_EQ(out[3][7], (40000.0f * 2 + 2) / 4);
}

// d = 1 on 2 hosts x 3 ranks: two of every host's three shards are empty (no compressor, empty
// slots); d = 0 works too.
TEST(TwoLevelSmall, EmptyShardsStillReduce) {
  std::vector<std::vector<float>> out(6);
  testing::runRanksEach(
      6,
      [&](runtime::Communicator& comm) {
        auto t = CompressedTensor::create(comm, "tiny", 1, {{"intra", "fp16"}, {"compressor", "topk"}, {"k", "1"}});
        ASSERT_TRUE(t.isOk()) << t.status().toString();
        float g = 1.0f + comm.rank();
        ASSERT_TRUE(t.value()->allreduce(&g).isOk());
        out[comm.rank()] = {g};
        auto empty = CompressedTensor::create(comm, "empty", 0, {{"intra", "none"}, {"compressor", "onebit"}});
        ASSERT_TRUE(empty.isOk()) << empty.status().toString();
        ASSERT_TRUE(empty.value()->allreduce(nullptr).isOk());
      },
      [](int r) { return interleaved(r, 2); });
  for (int r = 0; r < 6; ++r) EXPECT_FLOAT_EQ(out[r][0], 3.5f) << r;  // (1 + ... + 6) / 6, exact in f16
}

}  // namespace
}  // namespace tsr::compressed
