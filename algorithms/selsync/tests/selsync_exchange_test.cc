// SelSync's two extremes over real UCX (ranks as threads):
// - a delta above every observed change never synchronizes: the parameters stay local and each
//   step sends exactly what one flag exchange costs, measured alone on the same communicator;
// - delta = 0 is dense synchronous training: after every SGD-like step the parameters are
//   bit-identical to an explicit dense allreduce-average of the same parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "algorithms/selsync/selsync.h"
#include "tests/support/thread_world.h"

namespace tsr::selsync {
namespace {

// Rank r's deterministic "gradient" at `step` for parameter j: it depends on the parameter (so
// the trajectories of the ranks differ once they are not averaged) and on the rank.
float gradient(float param, int rank, int step, size_t j) {
  float target = static_cast<float>((rank + 1) * 0.25 + 0.01 * static_cast<double>(j % 13));
  return 0.5f * (param - target) + 0.001f * static_cast<float>((step * 7 + j) % 11) * (rank - 1);
}

class HugeDelta : public ::testing::TestWithParam<int> {};

TEST_P(HugeDelta, NeverSynchronizesAndSendsOnlyTheFlags) {
  const int n = GetParam();
  const int kSteps = 8;
  const std::vector<size_t> counts{1000, 24000, 7};  // ~100 KB of parameters
  size_t total = 0;
  for (size_t c : counts) total += c;
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    const int me = comm.rank();
    auto s = SelSync::create(comm, {{"delta", "1e30"}, {"ewma_window", "2"}}, counts);
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    // What one flag exchange costs on this communicator: the same allreduce SelSync issues
    // (exchangeWords: 2 ceil(N/64) + 13 64-bit words, sum), alone. Its bytes (payload and
    // headers) depend on the algorithm chosen for its size (on one host, the words written to
    // shared memory), so they are measured.
    std::vector<uint64_t> words = exchangeWords(n, me, false, Code::kOk), sum(words.size());
    uint64_t before = comm.bytesSent();
    auto req = comm.allreduce(words.data(), sum.data(), words.size(), DataType::kI64, ReduceOp::kSum);
    ASSERT_TRUE(req.isOk() && req.value()->wait().isOk());
    const uint64_t flagCost = comm.bytesSent() - before;
    if (n > 1 && req.value()->algorithm() == "shm") {
      EXPECT_EQ(flagCost, words.size() * sizeof(uint64_t))
          << "ranks on one host exchange flags through shared memory, counted as sent";
    } else if (n > 1) {
      EXPECT_GT(flagCost, 0u);
      EXPECT_LT(flagCost, total * sizeof(float) / 100) << "the flag exchange alone carries model data";
    } else {
      EXPECT_EQ(flagCost, 0u);
    }

    std::vector<std::vector<float>> model;
    for (size_t c : counts) model.emplace_back(c, 1.0f);  // the same start on every rank
    std::vector<float*> buckets;
    for (auto& b : model) buckets.push_back(b.data());
    for (int step = 0; step < kSteps; ++step) {
      double norm2 = 0;
      for (auto& b : model)
        for (size_t j = 0; j < b.size(); ++j) {
          float g = gradient(b[j], me, step, j);
          norm2 += static_cast<double>(g) * g;
          b[j] -= 0.1f * g;
        }
      // Every step's norm changes (it grows 4x at step 5 on the last rank); none by 1e30.
      if (me == n - 1 && step == 5) norm2 *= 4;
      std::vector<std::vector<float>> local = model;
      before = comm.bytesSent();
      auto r = s.value()->step(norm2, buckets);
      ASSERT_TRUE(r.isOk()) << r.status().toString();
      EXPECT_EQ(comm.bytesSent() - before, flagCost) << "step " << step << " rank " << me;
      EXPECT_FALSE(r.value().synchronized) << "step " << step;
      EXPECT_FALSE(r.value().flagged) << "step " << step << " change " << r.value().change;
      EXPECT_EQ(r.value().flaggedRanks, 0) << "step " << step;
      if (step == 0)
        EXPECT_EQ(r.value().change, 0.0) << "the first step has no previous norm";
      else
        EXPECT_GT(r.value().change, 0.0) << "step " << step;
      for (size_t b = 0; b < model.size(); ++b)
        ASSERT_EQ(std::memcmp(model[b].data(), local[b].data(), model[b].size() * sizeof(float)), 0)
            << "step " << step << ": bucket " << b << " changed on a local step";
    }
    const Stats& st = s.value()->stats();
    EXPECT_EQ(st.syncSteps, 0u);
    EXPECT_EQ(st.localSteps, static_cast<uint64_t>(kSteps));
    EXPECT_EQ(st.lssr(), 1.0);
    // The estimate's formula, exactly: 2 (N-1)/N x 4 B x 25,007 floats per local step.
    uint64_t perStep = n > 1 ? 2ull * (n - 1) * total * 4 / n : 0;
    EXPECT_EQ(savedBytesPerLocalStep(n, total), perStep);
    EXPECT_EQ(st.bytesSaved, kSteps * perStep);
    // The ranks really trained apart: their first parameter differs (gradients depend on rank).
    float mine = model[0][0], all[8] = {};
    auto g = comm.allgather(&mine, all, 1, DataType::kF32);
    ASSERT_TRUE(g.isOk() && g.value()->wait().isOk());
    if (n > 1) {
      EXPECT_NE(all[0], all[n - 1]);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(N, HugeDelta, ::testing::Values(1, 2, 3, 5));

TEST(SelSyncStats, LssrAndExactSavedBytes) {
  Stats st;
  EXPECT_EQ(st.lssr(), 0.0);  // no steps yet
  st.syncSteps = 3;
  st.localSteps = 9;
  EXPECT_DOUBLE_EQ(st.lssr(), 0.75);
  EXPECT_EQ(savedBytesPerLocalStep(1, 1000), 0u);
  EXPECT_EQ(savedBytesPerLocalStep(2, 1000), 4000u);          // 2 x 1/2 x 4,000 B
  EXPECT_EQ(savedBytesPerLocalStep(3, 1000), 5333u);          // 2 x 2/3 x 4,000 B, rounded down
  EXPECT_EQ(savedBytesPerLocalStep(3, 1020), 5440u);          // 2 x 2/3 x 4,080 B
  EXPECT_EQ(savedBytesPerLocalStep(64, 1u << 20), 8257536u);  // 2 x 63/64 x 4 MiB
}

class DeltaZero : public ::testing::TestWithParam<int> {};

// delta = 0 against dense: both copies start equal and take the same local SGD step; SelSync
// averages one copy, an explicit dense allreduce (average) of the concatenated parameters the
// other. The same count, type and operation run the same algorithm in the same order, so the
// results are compared bit for bit.
TEST_P(DeltaZero, SameParametersAsDenseAveragingEveryStep) {
  const int n = GetParam();
  const std::vector<size_t> counts{3, 513, 64};
  size_t total = 0;
  for (size_t c : counts) total += c;
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    const int me = comm.rank();
    auto s = SelSync::create(comm, {{"delta", "0"}, {"aggregate", "params"}}, counts);
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    std::vector<float> sel(total), dense(total);
    for (size_t j = 0; j < total; ++j) sel[j] = dense[j] = 0.5f + 0.001f * static_cast<float>(j % 97);
    std::vector<float*> buckets;
    for (size_t at = 0, b = 0; b < counts.size(); at += counts[b++]) buckets.push_back(sel.data() + at);
    for (int step = 0; step < 10; ++step) {
      double norm2 = 0;
      for (size_t j = 0; j < total; ++j) {
        float g = gradient(sel[j], me, step, j);
        norm2 += static_cast<double>(g) * g;
        sel[j] -= 0.3f * g;
        dense[j] -= 0.3f * gradient(dense[j], me, step, j);
      }
      auto r = s.value()->step(norm2, buckets);
      ASSERT_TRUE(r.isOk()) << r.status().toString();
      EXPECT_TRUE(r.value().synchronized) << "step " << step;
      EXPECT_EQ(r.value().flaggedRanks, n) << "step " << step;
      auto req = comm.allreduce(dense.data(), dense.data(), total, DataType::kF32, ReduceOp::kAvg);
      ASSERT_TRUE(req.isOk() && req.value()->wait().isOk());
      for (size_t j = 0; j < total; ++j)
        ASSERT_EQ(std::memcmp(&sel[j], &dense[j], sizeof(float)), 0)
            << "step " << step << " element " << j << ": selsync " << sel[j] << " dense " << dense[j];
    }
    EXPECT_EQ(s.value()->stats().syncSteps, 10u);
    EXPECT_EQ(s.value()->stats().bytesSaved, 0u);
  });
}

INSTANTIATE_TEST_SUITE_P(N, DeltaZero, ::testing::Values(2, 3, 4));

}  // namespace
}  // namespace tsr::selsync
