// Data injection over real UCX (ranks as threads): the chosen ranks' shares reach every other
// rank, in ascending sender order, with the sizes of the seed's formula; errors are named.
#include <gtest/gtest.h>

#include <cmath>

#include "algorithms/selsync/injection.h"
#include "algorithms/selsync/selsync_logic.h"
#include "tests/support/thread_world.h"

namespace tsr::selsync {
namespace {

class DataInjection : public ::testing::TestWithParam<int> {};

TEST_P(DataInjection, ChosenRanksSharesReachEveryOtherRank) {
  const int n = GetParam();
  const int batch = 32;
  const double alpha = 0.5, beta = 0.25;
  const size_t features = 3;  // floats per sample
  // Each chosen rank shares beta of its local batch b' = b / (1 + alpha beta N), so that
  // b' plus the alpha N shares that arrive make b again (seed's Eqn. 3).
  const int local = injectedLocalBatch(batch, alpha, beta, n);
  const size_t shareSamples = static_cast<size_t>(beta * local);
  const size_t share = shareSamples * features;
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    const int me = comm.rank();
    for (uint64_t step = 0; step < 6; ++step) {
      std::vector<float> mine(share);
      for (size_t j = 0; j < share; ++j) mine[j] = static_cast<float>(me * 10000 + step * 100 + j);
      std::vector<float> got(n * share + 1, -1.0f);
      auto r = injectData(comm, 42, step, alpha, mine.data(), share, got.data(), n * share);
      ASSERT_TRUE(r.isOk()) << r.status().toString();
      const auto& senders = r.value().senders;
      ASSERT_EQ(senders, injectionRanks(42, step, n, alpha));
      ASSERT_EQ(static_cast<int>(senders.size()), static_cast<int>(std::ceil(alpha * n - 1e-12)));
      size_t slot = 0;
      for (int s : senders) {
        if (s == me) continue;
        for (size_t j = 0; j < share; ++j)
          ASSERT_EQ(got[slot * share + j], static_cast<float>(s * 10000 + step * 100 + j))
              << "rank " << me << " step " << step << " share of rank " << s;
        ++slot;
      }
      EXPECT_EQ(r.value().receivedCount, slot * share);
      EXPECT_EQ(got[slot * share], -1.0f) << "wrote past the received shares";
      // b' local samples plus what arrived make about b (one share of slack: ceil(alpha N)).
      size_t total = local + r.value().receivedCount / features;
      EXPECT_LE(total, batch + shareSamples) << "step " << step;
      EXPECT_GE(total + shareSamples + 1, static_cast<size_t>(batch)) << "step " << step;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, DataInjection, ::testing::Values(1, 2, 3, 5),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

TEST(DataInjectionErrors, SmallBufferAndBadAlphaAreNamed) {
  testing::runRanks(3, [](runtime::Communicator& comm) {
    std::vector<float> mine(8, 1.0f), got(8);
    auto bad = injectData(comm, 1, 0, 1.5, mine.data(), 8, got.data(), got.size());
    ASSERT_FALSE(bad.isOk());
    EXPECT_NE(bad.status().message().find("alpha=1.5"), std::string::npos) << bad.status().message();
    // alpha = 1: every rank sends, so each receives 2 x 8 floats into room for 8.
    auto small = injectData(comm, 1, 0, 1.0, mine.data(), 8, got.data(), got.size());
    ASSERT_FALSE(small.isOk());
    EXPECT_NE(small.status().message().find("received holds 8 floats, 16 are coming"), std::string::npos)
        << small.status().message();
  });
}

// One rank whose buffers do not fit the draw (room for 2 floats where 8 are coming; a NULL
// share) fails with its own error, and the others at once with a mismatch naming it; they
// waited out the timeout (5 s here) for its messages.
TEST(DataInjectionErrors, ARankWhoseBuffersDoNotFitFailsEveryRank) {
  for (const char* what : {"capacity", "null share"}) {
    testing::runRanksEach(
        3,
        [&](runtime::Communicator& comm) {
          const bool odd = comm.rank() == 1, small = std::string(what) == "capacity";
          std::vector<float> mine(4, 1.0f), got(8);
          auto r = injectData(comm, 1, 0, 1.0, odd && !small ? nullptr : mine.data(), 4, got.data(),
                              odd && small ? 2 : got.size());
          ASSERT_FALSE(r.isOk()) << what << " on rank " << comm.rank();
          if (odd) {
            EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
            EXPECT_NE(r.status().message().find(small ? "received holds 2 floats, 8 are coming" : "share is NULL"),
                      std::string::npos)
                << r.status().message();
          } else {
            EXPECT_EQ(r.status().code(), Code::kMismatch) << r.status().toString();
            EXPECT_NE(r.status().message().find("buffers is"), std::string::npos) << r.status().message();
            EXPECT_NE(r.status().message().find("on rank 1"), std::string::npos) << r.status().message();
          }
        },
        [](int) {
          return testing::Settings{{"TSR_TIMEOUT_MS", "5000"}};
        });
  }
}

// A share count past 2^40 (a negative count cast to size_t, say) is refused naming it, on every
// rank and before anything moves. Unchecked, 2^62 floats made messages of 2^64 bytes, which
// wrapped to 0: the call "succeeded" having sent nothing, claiming 2^62 floats received.
TEST(DataInjectionErrors, ShareCountPast2To40IsRefusedOnEveryRank) {
  for (size_t count : {(size_t{1} << 40) + 1, size_t{1} << 62, SIZE_MAX}) {
    testing::runRanks(2, [&](runtime::Communicator& comm) {
      float mine = 1.0f, got = 0.0f;
      auto r = injectData(comm, 1, 0, 1.0, &mine, count, &got, SIZE_MAX);
      ASSERT_FALSE(r.isOk()) << count << " on rank " << comm.rank() << ": received " << r.value().receivedCount;
      EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().toString();
      EXPECT_NE(r.status().message().find("share count " + std::to_string(count) + " is too large"), std::string::npos)
          << r.status().message();
    });
  }
}

// Ranks that differ in seed or alpha would draw different senders: messages nobody receives,
// shares never sent, each rank "ok" with something else. The call's settings are compared
// first, and every rank fails naming what differs.
TEST(DataInjectionErrors, RanksThatDifferFailOnEveryRank) {
  for (const char* differs : {"seed", "alpha", "step"}) {
    testing::runRanks(3, [&](runtime::Communicator& comm) {
      const bool odd = comm.rank() == 2;
      const std::string key = differs;
      std::vector<float> mine(4, 1.0f), got(12);
      auto r = injectData(comm, key == "seed" && odd ? 7 : 1, key == "step" && odd ? 3 : 0,
                          key == "alpha" && odd ? 1.0 : 0.34, mine.data(), 4, got.data(), got.size());
      ASSERT_FALSE(r.isOk()) << differs << " on rank " << comm.rank();
      EXPECT_EQ(r.status().code(), Code::kMismatch) << r.status().toString();
      EXPECT_NE(r.status().message().find(key + " is "), std::string::npos) << r.status().message();
      EXPECT_NE(r.status().message().find("on rank 2"), std::string::npos) << r.status().message();
    });
  }
}

}  // namespace
}  // namespace tsr::selsync
