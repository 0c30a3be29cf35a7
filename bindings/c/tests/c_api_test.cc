// The C API (libtessera.so) as a C user sees it: ranks as threads calling tsr_comm_init_config
// with explicit launch keys over real UCX, blocking and non-blocking collectives, and every
// error path returning a status with a message in tsr_last_error() that names what was wrong.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "bindings/c/tests/c_ranks.h"
#include "tessera/tessera.h"

using tsr::ctest::lastError;
using tsr::ctest::runCRanks;

namespace {

TEST(CApi, BlockingAndNonBlockingCollectivesOverThreeRanks) {
  runCRanks(3, [](tsr_comm_t comm, int r) {
    int rank = -1, size = -1;
    ASSERT_EQ(tsr_comm_rank(comm, &rank), TSR_OK);
    ASSERT_EQ(tsr_comm_size(comm, &size), TSR_OK);
    EXPECT_EQ(rank, r);
    EXPECT_EQ(size, 3);
    std::vector<int64_t> in(1001, r + 1), out(1001);
    ASSERT_EQ(tsr_allreduce(comm, in.data(), out.data(), in.size(), TSR_INT64, TSR_SUM, nullptr), TSR_OK)
        << lastError();
    for (int64_t v : out) ASSERT_EQ(v, 6);

    std::vector<float> f(4096, static_cast<float>(r)), g(4096);
    tsr_request_t req = nullptr;
    ASSERT_EQ(tsr_allreduce(comm, f.data(), g.data(), f.size(), TSR_FLOAT32, TSR_MAX, &req), TSR_OK);
    tsr_status_t st;
    for (int spins = 0; (st = tsr_test(req)) == TSR_IN_PROGRESS && spins < 10000000; ++spins) {
    }
    ASSERT_EQ(st, TSR_OK) << lastError();
    ASSERT_EQ(tsr_request_free(req), TSR_OK);
    for (float v : g) ASSERT_EQ(v, 2.0f);

    std::vector<int32_t> mine(5, r * 10), all(15);
    ASSERT_EQ(tsr_allgather(comm, mine.data(), all.data(), 5, TSR_INT32, nullptr), TSR_OK);
    for (int q = 0; q < 3; ++q) EXPECT_EQ(all[q * 5], q * 10);
    std::vector<double> b(7, r == 2 ? 3.5 : 0.0);
    ASSERT_EQ(tsr_broadcast(comm, b.data(), b.data(), b.size(), TSR_FLOAT64, 2, nullptr), TSR_OK);
    EXPECT_EQ(b[6], 3.5);
    std::vector<int32_t> rs_in(6, 1), rs_out(2);
    ASSERT_EQ(tsr_reduce_scatter(comm, rs_in.data(), rs_out.data(), 2, TSR_INT32, TSR_SUM, nullptr), TSR_OK);
    EXPECT_EQ(rs_out[0], 3);
    ASSERT_EQ(tsr_barrier(comm, nullptr), TSR_OK);
    uint64_t sent = 0;
    ASSERT_EQ(tsr_comm_bytes_sent(comm, &sent), TSR_OK);
    EXPECT_GT(sent, 0u);
  });
}

// A process tsrun --respawn started to replace a failed rank (TSR_JOIN=1) is told at once to
// join; its bootstrap would otherwise wait for peers that started long ago, then time out.
TEST(CApi, AReplacementProcessIsToldToJoinNotToInit) {
  ASSERT_EQ(setenv("TSR_JOIN", "1", 1), 0);
  tsr_comm_t comm = nullptr;
  tsr_param_t one[] = {{"rank", "0"}, {"size", "1"}};
  EXPECT_EQ(tsr_comm_init_config(&comm, one, 2), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("TSR_JOIN=1: this process was started to replace a failed rank"), std::string::npos)
      << lastError();
  EXPECT_NE(lastError().find("tsr_comm_join"), std::string::npos) << lastError();
  EXPECT_EQ(comm, nullptr);
  unsetenv("TSR_JOIN");
}

// A mismatch fails the collective on every rank, naming both ranks and the field, and leaves
// the communicator unusable (aborted) from then on.
TEST(CApi, MismatchReachesEveryRankAndLeavesTheCommunicatorAborted) {
  runCRanks(3,
            [](tsr_comm_t comm, int r) {
              std::vector<float> x(100);
              size_t count = r == 1 ? 99 : 100;
              EXPECT_EQ(tsr_allreduce(comm, x.data(), x.data(), count, TSR_FLOAT32, TSR_SUM, nullptr), TSR_ERR_MISMATCH)
                  << lastError();
              std::string error = lastError();
              EXPECT_NE(error.find("count differs"), std::string::npos) << error;
              // Rank 1 (the odd one) and a neighbour that compared headers with it.
              EXPECT_NE(error.find("rank 1 called"), std::string::npos) << error;
              EXPECT_TRUE(error.find("rank 0 called") != std::string::npos ||
                          error.find("rank 2 called") != std::string::npos)
                  << error;
              // The communicator is unusable from then on, and says why.
              EXPECT_EQ(tsr_barrier(comm, nullptr), TSR_ERR_ABORTED) << lastError();
              EXPECT_NE(lastError().find("MISMATCH"), std::string::npos) << lastError();
            },
            {{"timeout_ms", "20000"}});
}

// tsr_comm_abort on one rank: the peers' pending collective (posted, waiting for the aborting
// rank) fails with TSR_ERR_ABORTED naming it, and every later collective fails the same way on
// every rank, the aborting one included: abort is final. The aborting rank destroys its
// communicator right after (runCRanks): the notice must still reach the peers first.
TEST(CApi, AbortFailsThePeersPendingCollectiveAndIsFinal) {
  std::latch posted(2);
  runCRanks(
      3,
      [&](tsr_comm_t comm, int r) {
        std::vector<float> x(4096, 1.0f);
        if (r == 2) {
          posted.wait();  // ranks 0 and 1 have posted the allreduce that waits for this rank
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          ASSERT_EQ(tsr_comm_abort(comm), TSR_OK) << lastError();
        } else {
          tsr_request_t req = nullptr;
          ASSERT_EQ(tsr_allreduce(comm, x.data(), x.data(), x.size(), TSR_FLOAT32, TSR_SUM, &req), TSR_OK)
              << lastError();
          EXPECT_EQ(tsr_test(req), TSR_IN_PROGRESS) << "rank 2 has not joined yet";
          posted.count_down();
          EXPECT_EQ(tsr_wait(req), TSR_ERR_ABORTED) << lastError();
          EXPECT_NE(lastError().find("rank 2 aborted"), std::string::npos) << lastError();
          EXPECT_EQ(tsr_request_free(req), TSR_OK);
        }
        EXPECT_EQ(tsr_allreduce(comm, x.data(), x.data(), x.size(), TSR_FLOAT32, TSR_SUM, nullptr), TSR_ERR_ABORTED)
            << "rank " << r << ": " << lastError();
        EXPECT_NE(lastError().find("rank 2 aborted"), std::string::npos) << "rank " << r << ": " << lastError();
        EXPECT_EQ(tsr_barrier(comm, nullptr), TSR_ERR_ABORTED) << "rank " << r << ": " << lastError();
      },
      {{"timeout_ms", "20000"}});
}

// The cost model's estimate: what the "auto" DDP hook weighs dense against sparse with. Grows
// with the size, all-gathering a little beats allreducing a lot, the same on every rank, and a
// collective it does not estimate is named.
TEST(CApi, EstimateFollowsTheCostModel) {
  runCRanks(3,
            [](tsr_comm_t comm, int) {
              double small = 0, large = 0, gather = 0;
              ASSERT_EQ(tsr_comm_estimate(comm, "allreduce", 1024, &small), TSR_OK) << lastError();
              ASSERT_EQ(tsr_comm_estimate(comm, "allreduce", 64 << 20, &large), TSR_OK) << lastError();
              ASSERT_EQ(tsr_comm_estimate(comm, "allgather", 64 << 10, &gather), TSR_OK) << lastError();
              EXPECT_GT(small, 0);
              EXPECT_GT(large, 100 * small);
              EXPECT_LT(gather, large);
              double seconds = 0;
              EXPECT_EQ(tsr_comm_estimate(comm, "gossip", 10, &seconds), TSR_ERR_INVALID_ARGUMENT);
              EXPECT_NE(lastError().find("gossip"), std::string::npos) << lastError();
              EXPECT_EQ(tsr_comm_estimate(comm, "allreduce", 10, nullptr), TSR_ERR_INVALID_ARGUMENT);
            },
            {{"link_bw", "1gbit"}, {"link_lat", "50us"}});
}

// Local rank and size come from the launch (here "local_rank"/"local_size" as a launcher
// would set them for 2 hosts of 2 ranks), independent of the global rank.
TEST(CApi, LocalRankIsTheLaunchersLocalRank) {
  runCRanks(
      4,
      [](tsr_comm_t comm, int r) {
        int rank = -1, localRank = -1;
        ASSERT_EQ(tsr_comm_rank(comm, &rank), TSR_OK);
        ASSERT_EQ(tsr_comm_local_rank(comm, &localRank), TSR_OK) << lastError();
        EXPECT_EQ(rank, r);
        EXPECT_EQ(localRank, r % 2);
        EXPECT_EQ(tsr_comm_local_rank(comm, nullptr), TSR_ERR_INVALID_ARGUMENT);
        EXPECT_NE(lastError().find("local_rank is NULL"), std::string::npos) << lastError();
      },
      {},
      [](int r) {
        return std::pair<int, int>{r % 2, 2};
      });
  EXPECT_EQ(tsr_comm_local_rank(nullptr, nullptr), TSR_ERR_INVALID_ARGUMENT);
}

TEST(CApi, SelSyncHandle) {
  runCRanks(2, [](tsr_comm_t comm, int r) {
    size_t counts[] = {3, 2};
    tsr_selsync_t s = nullptr;
    tsr_param_t bad[] = {{"delta", "-2"}};
    EXPECT_EQ(tsr_selsync_create(comm, bad, 1, counts, 2, &s), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("delta=-2"), std::string::npos) << lastError();
    tsr_param_t ok[] = {{"delta", "0"}};
    ASSERT_EQ(tsr_selsync_create(comm, ok, 1, counts, 2, &s), TSR_OK) << lastError();
    float a[3] = {1.0f * r, 2, 3}, b[2] = {4, 10.0f * r};
    float* buckets[] = {a, b};
    int synced = -1;
    ASSERT_EQ(tsr_selsync_step(s, 1.0, buckets, &synced), TSR_OK) << lastError();
    EXPECT_EQ(synced, 1);
    EXPECT_FLOAT_EQ(a[0], 0.5f);
    EXPECT_FLOAT_EQ(b[1], 5.0f);
    uint64_t syncs = 0, locals = 9;
    ASSERT_EQ(tsr_selsync_stats(s, &syncs, &locals, nullptr), TSR_OK);
    EXPECT_EQ(syncs, 1u);
    EXPECT_EQ(locals, 0u);
    EXPECT_EQ(tsr_selsync_step(s, std::nan(""), buckets, &synced), TSR_ERR_NUMERIC);
    EXPECT_EQ(tsr_selsync_destroy(s), TSR_OK);
    // Data injection with alpha = 1 on 2 ranks: each receives the other's share.
    float share[3] = {10.0f * r, 10.0f * r + 1, 10.0f * r + 2}, got[6] = {0};
    size_t received = 99;
    ASSERT_EQ(tsr_selsync_inject(comm, 7, 0, 1.0, share, 3, got, 6, &received), TSR_OK) << lastError();
    EXPECT_EQ(received, 3u);
    EXPECT_EQ(got[2], 10.0f * (1 - r) + 2);
    EXPECT_EQ(tsr_selsync_inject(comm, 7, 1, -0.5, share, 3, got, 6, &received), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("alpha=-0.5"), std::string::npos) << lastError();
  });
}

TEST(CApi, CovapHandle) {
  runCRanks(2, [](tsr_comm_t comm, int r) {
    size_t counts[] = {4, 6};
    tsr_covap_t c = nullptr;
    tsr_param_t bad[] = {{"interval", "0"}};
    EXPECT_EQ(tsr_covap_create(comm, bad, 1, counts, 2, &c), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("interval=0"), std::string::npos) << lastError();
    tsr_param_t ok[] = {{"interval", "2"}};
    ASSERT_EQ(tsr_covap_create(comm, ok, 1, counts, 2, &c), TSR_OK) << lastError();
    float g0[4] = {1.0f * r, 1, 1, 1}, g1[6] = {2.0f * r, 0, 0, 0, 0, 0};
    ASSERT_EQ(tsr_covap_begin_step(c), TSR_OK);
    ASSERT_EQ(tsr_covap_bucket_ready(c, 1, g1), TSR_OK);
    ASSERT_EQ(tsr_covap_bucket_ready(c, 0, g0), TSR_OK);
    EXPECT_EQ(tsr_covap_bucket_ready(c, 5, g0), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("bucket 5"), std::string::npos) << lastError();
    ASSERT_EQ(tsr_covap_finish_step(c), TSR_OK) << lastError();
    EXPECT_FLOAT_EQ(g0[0], 0.5f);  // shard 0 at step 0: (0 + 0) mod 2 == 0, averaged
    EXPECT_FLOAT_EQ(g1[0], 0.0f);  // shard 1: skipped, kept as residual
    int interval = 0;
    ASSERT_EQ(tsr_covap_info(c, &interval, nullptr), TSR_OK);
    EXPECT_EQ(interval, 2);
    EXPECT_EQ(tsr_covap_destroy(c), TSR_OK);
  });
}

// Marsit and dense tensors, blocking and non-blocking: the Marsit result is +-eta on every
// element and the same on every rank, the residual is what the sign discarded; the dense one
// is the average. Bad declarations name the tensor, key and value.
TEST(CApi, TensorHandles) {
  const int n = 3;
  const size_t count = 130;
  std::vector<std::vector<float>> results(n);
  runCRanks(n, [&](tsr_comm_t comm, int r) {
    tsr_tensor_t t = nullptr, d = nullptr;
    tsr_param_t badAlgo[] = {{"algorithm", "marsitt"}};
    EXPECT_EQ(tsr_tensor_create(comm, "w", count, TSR_FLOAT32, badAlgo, 1, &t), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("algorithm=marsitt"), std::string::npos) << lastError();
    tsr_param_t badKey[] = {{"algorithm", "marsit"}, {"topology", "tree"}};
    EXPECT_EQ(tsr_tensor_create(comm, "fc1", count, TSR_FLOAT32, badKey, 2, &t), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("fc1"), std::string::npos) << lastError();
    EXPECT_NE(lastError().find("topology=tree"), std::string::npos) << lastError();
    tsr_param_t marsit[] = {{"algorithm", "marsit"}, {"seed", "11"}};
    EXPECT_EQ(tsr_tensor_create(comm, "w", count, TSR_FLOAT64, marsit, 2, &t), TSR_ERR_NOT_SUPPORTED);
    EXPECT_NE(lastError().find("TSR_FLOAT32"), std::string::npos) << "<" << lastError() << ">";
    tsr_param_t denseExtra[] = {{"seed", "1"}};
    EXPECT_EQ(tsr_tensor_create(comm, "b", 4, TSR_FLOAT32, denseExtra, 1, &d), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("seed=1"), std::string::npos) << lastError();

    ASSERT_EQ(tsr_tensor_create(comm, "w", count, TSR_FLOAT32, marsit, 2, &t), TSR_OK) << lastError();
    ASSERT_EQ(tsr_tensor_create(comm, "b", 4, TSR_FLOAT32, nullptr, 0, &d), TSR_OK) << lastError();
    const char* algo = nullptr;
    ASSERT_EQ(tsr_tensor_info(t, nullptr, &algo), TSR_OK);
    EXPECT_STREQ(algo, "marsit-ring");
    std::vector<float> g(count), in(count), residual(count);
    for (size_t j = 0; j < count; ++j) in[j] = g[j] = std::sin(0.3f * j * (r + 1)) + 0.1f * r;
    tsr_request_t req = nullptr;
    ASSERT_EQ(tsr_tensor_allreduce(t, g.data(), &req), TSR_OK) << lastError();
    ASSERT_EQ(tsr_wait(req), TSR_OK) << lastError();
    tsr_request_free(req);
    uint64_t steps = 0;
    ASSERT_EQ(tsr_tensor_info(t, &steps, nullptr), TSR_OK);
    ASSERT_EQ(steps, 1u);
    ASSERT_EQ(tsr_tensor_residual(t, residual.data()), TSR_OK);
    for (size_t j = 0; j < count; ++j) ASSERT_NEAR(residual[j], in[j] - g[j], 1e-5) << j;
    for (size_t j = 0; j < count; ++j) ASSERT_EQ(std::fabs(g[j]), std::fabs(g[0])) << j;
    results[r] = g;

    tsr_tensor_t c = nullptr;
    tsr_param_t topk[] = {{"algorithm", "compressed"}, {"compressor", "topk"}, {"k", "2"}};
    ASSERT_EQ(tsr_tensor_create(comm, "c", 8, TSR_FLOAT32, topk, 3, &c), TSR_OK) << lastError();
    ASSERT_EQ(tsr_tensor_info(c, nullptr, &algo), TSR_OK);
    EXPECT_STREQ(algo, "compressed:ef(topk(k=2))");
    float v[8] = {0, 0, 0, 9, 0, 0, 0, 3.0f * r}, kept[8];
    ASSERT_EQ(tsr_tensor_allreduce(c, v, nullptr), TSR_OK) << lastError();
    EXPECT_FLOAT_EQ(v[3], 9.0f);
    EXPECT_FLOAT_EQ(v[7], 3.0f);  // (0 + 3 + 6) / 3
    ASSERT_EQ(tsr_tensor_residual(c, kept), TSR_OK);
    for (float k : kept) EXPECT_EQ(k, 0.0f);  // top-2 of each rank held everything
    EXPECT_EQ(tsr_tensor_destroy(c), TSR_OK);

    tsr_tensor_t sp = nullptr;
    tsr_param_t spardl[] = {{"algorithm", "spardl"}, {"density", "0.5"}};
    ASSERT_EQ(tsr_tensor_create(comm, "s", 6, TSR_FLOAT32, spardl, 2, &sp), TSR_OK) << lastError();
    ASSERT_EQ(tsr_tensor_info(sp, nullptr, &algo), TSR_OK);
    EXPECT_STREQ(algo, "spardl");
    float u[6] = {1, 0, 0, 0, 0, 0}, dropped[6];
    ASSERT_EQ(tsr_tensor_allreduce(sp, u, nullptr), TSR_OK) << lastError();
    EXPECT_FLOAT_EQ(u[0], 3.0f);  // one entry per rank, all kept: the sum
    ASSERT_EQ(tsr_tensor_residual(sp, dropped), TSR_OK);
    EXPECT_EQ(dropped[0], 0.0f);
    tsr_param_t badDensity[] = {{"algorithm", "spardl"}, {"density", "0"}};
    EXPECT_EQ(tsr_tensor_create(comm, "s2", 6, TSR_FLOAT32, badDensity, 2, &c), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("density=0"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_tensor_destroy(sp), TSR_OK);

    float b[4] = {1.0f * r, 2, 3, 4};
    ASSERT_EQ(tsr_tensor_allreduce(d, b, nullptr), TSR_OK) << lastError();
    EXPECT_FLOAT_EQ(b[0], 1.0f);  // (0 + 1 + 2) / 3
    ASSERT_EQ(tsr_tensor_info(d, &steps, &algo), TSR_OK);
    EXPECT_EQ(steps, 1u);
    EXPECT_STREQ(algo, "dense");
    EXPECT_EQ(tsr_tensor_destroy(t), TSR_OK);
    EXPECT_EQ(tsr_tensor_destroy(d), TSR_OK);
  });
  for (int r = 1; r < n; ++r) EXPECT_EQ(results[r], results[0]) << "rank " << r;
}

// algorithm=compressed with intra=fp16 on 4 ranks of one host (grid 2 x 2): the same result
// everywhere, and N * result + sum of residuals = sum of inputs (to f16 sum rounding);
// intra=bogus is named.
TEST(CApi, TwoLevelCompressedTensor) {
  const int n = 4;
  const size_t count = 90;
  std::vector<std::vector<float>> in(n), out(n), kept(n, std::vector<float>(count));
  runCRanks(n, [&](tsr_comm_t comm, int r) {
    tsr_tensor_t t = nullptr;
    tsr_param_t bad[] = {{"algorithm", "compressed"}, {"compressor", "topk"}, {"k", "5"}, {"intra", "bogus"}};
    EXPECT_EQ(tsr_tensor_create(comm, "h", count, TSR_FLOAT32, bad, 4, &t), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("intra=bogus"), std::string::npos) << lastError();
    tsr_param_t p[] = {{"algorithm", "compressed"}, {"compressor", "topk"}, {"k", "10"}, {"intra", "fp16"}};
    ASSERT_EQ(tsr_tensor_create(comm, "h", count, TSR_FLOAT32, p, 4, &t), TSR_OK) << lastError();
    const char* algo = nullptr;
    ASSERT_EQ(tsr_tensor_info(t, nullptr, &algo), TSR_OK);
    EXPECT_STREQ(algo, "compressed-2level-fp16:ef(topk(k=5))");  // k=10 split over 2 shards
    std::vector<float> g(count);
    for (size_t j = 0; j < count; ++j) g[j] = std::sin(0.7f * j + r);
    in[r] = g;
    ASSERT_EQ(tsr_tensor_allreduce(t, g.data(), nullptr), TSR_OK) << lastError();
    out[r] = g;
    ASSERT_EQ(tsr_tensor_residual(t, kept[r].data()), TSR_OK);
    EXPECT_EQ(tsr_tensor_destroy(t), TSR_OK);
  });
  for (int r = 1; r < n; ++r) EXPECT_EQ(out[r], out[0]) << "rank " << r;
  for (size_t j = 0; j < count; ++j) {
    double lhs = n * static_cast<double>(out[0][j]), rhs = 0;
    for (int r = 0; r < n; ++r) lhs += kept[r][j], rhs += in[r][j];
    EXPECT_NEAR(lhs, rhs, 1e-2) << j;
  }
}

TEST(CApi, EveryStatusHasAName) {
  for (int s = TSR_OK; s <= TSR_ERR_NUMERIC; ++s)
    EXPECT_STRNE(tsr_status_string(static_cast<tsr_status_t>(s)), "") << s;
  EXPECT_STREQ(tsr_status_string(TSR_ERR_TIMEOUT), "TSR_ERR_TIMEOUT");
}

}  // namespace
