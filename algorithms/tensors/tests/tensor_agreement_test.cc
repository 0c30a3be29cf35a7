// The first-step comparison of the ranks' tensors (algorithms/team/first_step_agreement.h) over
// real UCX (ranks as threads): tensors that differ in a setting no message size shows (a seed,
// a momentum, a count inside one sign word, k, the density, op=) fail their first step on every
// rank with TSR_ERR_MISMATCH naming the key, its values and the ranks; tensors created alike,
// whether a default is spelled out or not, step as before.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "algorithms/team/first_step_agreement.h"
#include "algorithms/tensors/tensor_registry.h"
#include "runtime/communicator.h"
#include "tests/support/thread_world.h"

namespace tsr::algorithms {
namespace {

using Params = std::map<std::string, std::string>;

TEST(SettingsAgreement, TheMessageNamesEachDifferingKeyWithItsValuesAndRanks) {
  EXPECT_EQ(describeDisagreement({"count=8; seed=1", "count=8; seed=1"}), "");
  EXPECT_EQ(describeDisagreement({"count=8; seed=1", "count=9; seed=1", "count=8; seed=2"}),
            "the ranks created it differently: count is 8 on ranks 0,2, 9 on rank 1; seed is 1 on ranks 0,1, 2 on "
            "rank 2");
  // A key only some ranks have.
  EXPECT_EQ(describeDisagreement({"a=1", "a=1; b=2"}),
            "the ranks created it differently: b is (none) on rank 0, 2 on "
            "rank 1");
  // Values that hold "=" or spaces stay whole.
  EXPECT_EQ(describeDisagreement({"algorithm=spardl-rsag T=2", "algorithm=spardl"}),
            "the ranks created it differently: algorithm is spardl-rsag T=2 on rank 0, spardl on rank 1");
}

// Every rank makes tensor `count` elements with paramsOf(rank), steps it once; returns what
// each rank's step ended with.
template <typename ParamsOf, typename CountOf>
std::vector<Status> firstStep(int ranks, ParamsOf paramsOf, CountOf countOf) {
  std::vector<Status> out(ranks);
  testing::runRanks(ranks, [&](runtime::Communicator& comm) {
    const size_t count = countOf(comm.rank());
    auto made = makeTensor(comm, {"w", count, DataType::kF32, paramsOf(comm.rank())}, "test");
    ASSERT_TRUE(made.isOk()) << made.status().message();
    std::vector<float> g(count);
    for (size_t j = 0; j < count; ++j) g[j] = std::sin(0.1f * static_cast<float>(j) + comm.rank());
    auto posted = made.value()->allreduceAsync(g.data());
    ASSERT_TRUE(posted.isOk()) << posted.status().message();
    out[comm.rank()] = posted.value()->wait();
  });
  return out;
}

void expectMismatchOnEveryRank(const std::vector<Status>& steps, const std::string& says) {
  for (size_t r = 0; r < steps.size(); ++r) {
    EXPECT_EQ(steps[r].code(), Code::kMismatch) << "rank " << r << ": " << steps[r].toString();
    EXPECT_NE(steps[r].message().find(says), std::string::npos) << "rank " << r << ": " << steps[r].message();
    EXPECT_NE(steps[r].message().find("tensor w"), std::string::npos) << steps[r].message();
  }
}

TEST(SettingsAgreement, SettingsNoMessageSizeShowsFailTheFirstStepOnEveryRank) {
  auto same = [](size_t n) { return [n](int) { return n; }; };
  // Marsit's seed and momentum: the same bits on the wire, different meanings.
  expectMismatchOnEveryRank(firstStep(
                                3,
                                [](int r) {
                                  return Params{{"algorithm", "marsit"}, {"seed", r == 2 ? "7" : "1"}};
                                },
                                same(1000)),
                            "seed is 1 on ranks 0,1, 7 on rank 2");
  expectMismatchOnEveryRank(firstStep(
                                2,
                                [](int r) {
                                  return Params{{"algorithm", "marsit"}, {"momentum", r ? "0.5" : "0.9"}};
                                },
                                same(4096)),
                            "momentum is 0.9 on rank 0, 0.5 on rank 1");
  // Counts inside one 64-bit sign word.
  expectMismatchOnEveryRank(firstStep(
                                3,
                                [](int) {
                                  return Params{{"algorithm", "marsit"}};
                                },
                                [](int r) { return size_t{1000} + r; }),
                            "count is 1000 on rank 0, 1001 on rank 1, 1002 on rank 2");
  // top-k's k, SparDL's density, op=.
  expectMismatchOnEveryRank(firstStep(
                                2,
                                [](int r) {
                                  return Params{{"algorithm", "topk"}, {"k", r ? "0.02" : "0.01"}};
                                },
                                same(4096)),
                            "algorithm is compressed:ef(topk(k=41)) on rank 0, compressed:ef(topk(k=82)) on rank 1");
  expectMismatchOnEveryRank(firstStep(
                                2,
                                [](int r) {
                                  return Params{{"algorithm", "spardl"}, {"density", r ? "0.05" : "0.01"}};
                                },
                                same(4096)),
                            "density is 0.01 on rank 0, 0.05 on rank 1");
  expectMismatchOnEveryRank(firstStep(
                                2,
                                [](int r) {
                                  return Params{{"algorithm", "marsit"}, {"op", r ? "sum" : "avg"}};
                                },
                                same(2048)),
                            "op is avg on rank 0, sum on rank 1");
}

TEST(SettingsAgreement, TensorsCreatedAlikeStepWhetherADefaultIsSpelledOutOrNot) {
  // momentum=0.9 is Marsit's default; the compressed seed's is 0; names may differ.
  for (const char* algorithm : {"marsit", "topk", "spardl"}) {
    testing::runRanks(2, [&](runtime::Communicator& comm) {
      Params params{{"algorithm", algorithm}};
      if (comm.rank() == 1) {
        if (std::string(algorithm) == "marsit") params["momentum"] = "0.9";
        if (std::string(algorithm) == "topk") params["seed"] = "0";
        if (std::string(algorithm) == "spardl") params["density"] = "0.01";
      }
      const size_t count = 4096;
      auto made = makeTensor(comm, {"w" + std::to_string(comm.rank()), count, DataType::kF32, params}, "test");
      ASSERT_TRUE(made.isOk()) << made.status().message();
      std::vector<float> g(count, 1.0f + comm.rank());
      for (int step = 0; step < 3; ++step) {
        auto posted = made.value()->allreduceAsync(g.data());
        ASSERT_TRUE(posted.isOk()) << posted.status().message();
        Status st = posted.value()->wait();
        ASSERT_TRUE(st.isOk()) << algorithm << " step " << step << ": " << st.toString();
      }
      EXPECT_EQ(made.value()->steps(), 3u);
    });
  }
}

}  // namespace
}  // namespace tsr::algorithms
