// The direct device path of the compressed tensor (flat and two-level) when a step's input
// is bad, with the fakes of tests/support/device_fakes.h (a "device" of host memory running the
// CPU kernels; a transport wrapper claiming CUDA support): a host pointer is refused; NaN, Inf
// and finite values the compressor cannot take fail the step on every rank, named, with the
// buffer and the residual unchanged, as on the host. No GPU is involved.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/compressed/compressed_tensor.h"
#include "tests/support/direct_path_checks.h"

namespace tsr {
namespace {

using compressed::CompressedTensor;
using testing::Opened;
using testing::Params;
using testing::sameBits;
using testing::World;

constexpr testing::InputOf inputOf = testing::compressedInputOf;

// Two fake hosts (so the two-level form has columns), and a short timeout: a rank that did not
// fail with the others would show as a timeout, not a hang.
testing::Settings onTwoFakeHostsFailingFast(int rank) {
  testing::Settings s = testing::onFakeHosts(rank, 2);
  s["TSR_TIMEOUT_MS"] = "5000";
  return s;
}

// A host pointer is refused naming the tensor and rank; NaN (rank 1) and Inf (rank 2) fail the
// step on every rank naming the element, leaving the buffer and the residual as they were;
// the memory cannot be switched once chosen and stepped.
void expectBadInputNamed(const Params& params) {
  World world(3);
  testing::runRanksWrapped(
      3,
      [&](runtime::Communicator& comm) {
        Opened opened;
        std::unique_ptr<CompressedTensor> t;
        ASSERT_NO_FATAL_FAILURE(testing::openDirectRefusingHostMemory(comm, "emb", params, opened, t));

        float* d = static_cast<float*>(opened.kernels->allocate(1000 * sizeof(float)).value());
        for (int step = 0; step < 2; ++step) {  // a good step first, so the residual is not trivially zero
          for (size_t j = 0; j < 1000; ++j) d[j] = inputOf(comm.rank(), j, step);
          if (step == 1 && comm.rank() == 1) d[17] = NAN;
          if (step == 1 && comm.rank() == 2) d[5] = -INFINITY;
          std::vector<float> before(d, d + 1000), residualBefore(1000), residualAfter(1000);
          std::vector<float> momentumBefore(1000);
          t->residual(residualBefore.data());
          t->momentum(momentumBefore.data());
          Status st = t->allreduce(d);
          if (step == 0) {
            ASSERT_TRUE(st.isOk()) << st.toString();
            continue;
          }
          EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
          EXPECT_NE(st.message().find("compressed tensor emb: 2 rank(s) had NaN or Inf"), std::string::npos)
              << st.toString();
          if (comm.rank() == 1) {
            EXPECT_NE(st.message().find("element 17 is nan"), std::string::npos) << st.toString();
          }
          if (comm.rank() == 2) {
            EXPECT_NE(st.message().find("element 5 is -inf"), std::string::npos) << st.toString();
          }
          EXPECT_TRUE(sameBits(before.data(), d, 1000)) << "rank " << comm.rank();
          t->residual(residualAfter.data());
          EXPECT_TRUE(sameBits(residualBefore.data(), residualAfter.data(), 1000)) << "rank " << comm.rank();
          t->momentum(residualAfter.data());
          EXPECT_TRUE(sameBits(momentumBefore.data(), residualAfter.data(), 1000)) << "rank " << comm.rank();
          EXPECT_EQ(t->step(), 1u);
        }
        for (size_t j = 0; j < 1000; ++j) d[j] = inputOf(comm.rank(), j, 2);
        ASSERT_TRUE(t->allreduce(d).isOk());
        ASSERT_NO_FATAL_FAILURE(testing::expectMemoryFixedAfterSteps(*t, opened, "emb", 2));
        EXPECT_EQ(opened.kernels->violations, 0);
        opened.kernels->release(d);
      },
      [](int) { return testing::Settings{}; }, world.wrapper(true));
}

TEST(CompressedDirect, BadInputIsNamed) {
  expectBadInputNamed({{"compressor", "fp16"}, {"ef", "none"}});
  expectBadInputNamed({{"compressor", "topk"}, {"k", "20"}, {"momentum", "nesterov"}});  // ef=vanilla by default
}

// A finite value that one rank's compressor cannot take (past f16; g + e overflowing after error
// feedback; a two-level host average past f16 in the column's compressor) fails the step on
// every rank with the host tensor's message, found on the device before the flag exchange; the
// residual is unchanged and the next step equals the host tensor's. It failed on the odd rank
// alone, after the flag, and the others waited out the timeout (5 s here).
struct Unencodable {
  Params params;
  std::vector<int> odd;  // the ranks with the value
  float residual;        // set at element 5 on those ranks first (0: none)
  float value;           // their gradient at element 5
};

void expectUnencodableFailsEveryRank(const Unencodable& c) {
  World world(4);
  testing::runRanksWrapped(
      4,
      [&](runtime::Communicator& comm) {
        Params params = c.params;
        params["algorithm"] = "compressed";
        Opened opened;
        std::unique_ptr<CompressedTensor> t;
        ASSERT_NO_FATAL_FAILURE(testing::openDirectRefusingHostMemory(comm, "big", params, opened, t));
        auto host = CompressedTensor::create(comm, "big", 1000, params);  // the same name: the same messages
        ASSERT_TRUE(host.isOk());
        const bool odd = std::find(c.odd.begin(), c.odd.end(), comm.rank()) != c.odd.end();
        std::vector<float> h(1000), rh(1000), rd(1000), before(1000);
        if (odd && c.residual != 0.0f) {
          std::vector<float> residual(1000, 0.0f);
          residual[5] = c.residual;
          ASSERT_TRUE(t->setResidual(residual.data()).isOk());
          ASSERT_TRUE(host.value()->setResidual(residual.data()).isOk());
        }
        float* d = static_cast<float*>(opened.kernels->allocate(1000 * sizeof(float)).value());
        for (int step = 0; step < 2; ++step) {
          for (size_t j = 0; j < 1000; ++j) h[j] = d[j] = inputOf(comm.rank(), j, step);
          if (step == 0 && odd) h[5] = d[5] = c.value;
          t->residual(before.data());
          Status hs = host.value()->allreduce(h.data());
          Status st = t->allreduce(d);
          t->residual(rd.data());
          host.value()->residual(rh.data());
          EXPECT_TRUE(sameBits(rh.data(), rd.data(), 1000)) << "residual, rank " << comm.rank() << " step " << step;
          if (step == 1) {
            ASSERT_TRUE(st.isOk()) << st.toString();
            EXPECT_TRUE(sameBits(h.data(), d, 1000)) << "after the failed step, rank " << comm.rank();
            continue;
          }
          EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
          EXPECT_EQ(hs.code(), Code::kNumericError) << hs.toString();
          EXPECT_EQ(st.message(), hs.message());
          EXPECT_NE(st.message().find("compressed tensor big"), std::string::npos) << st.toString();
          EXPECT_TRUE(sameBits(before.data(), rd.data(), 1000)) << "residual changed, rank " << comm.rank();
        }
        EXPECT_EQ(opened.kernels->violations, 0);
        opened.kernels->release(d);
      },
      onTwoFakeHostsFailingFast, world.wrapper(true));
}

TEST(CompressedDirect, AValueOneRankCannotEncodeFailsEveryRank) {
  expectUnencodableFailsEveryRank({{{"compressor", "fp16"}, {"ef", "none"}}, {1}, 0.0f, 66000.0f});
  expectUnencodableFailsEveryRank({{{"compressor", "topk"}, {"k", "8"}}, {2}, 3e38f, 3e38f});
  expectUnencodableFailsEveryRank({{{"compressor", "bf16"}, {"momentum", "nesterov"}}, {3}, 3e38f, 3e38f});
}

// The momentum hand-off: g + mu M overflowing on one rank (its g and the estimate M large
// enough) is what the compressor would get, so the device checks it as the host compressor
// does; the step fails on every rank, the estimate unchanged, and the next step equals the host
// tensor's. With error feedback, rank 2 also keeps a residual at element 3 (top-8 takes eight
// larger values) that makes g + mu M + e overflow before element 5: the host chain names element
// 5 (its outer stage scans g + mu M first), so the device must too.
void expectHandOffPastF32FailsEveryRank(const std::string& ef) {
  SCOPED_TRACE("ef=" + ef);
  World world(4);
  const Params params{
      {"algorithm", "compressed"}, {"compressor", "topk"}, {"k", "8"}, {"ef", ef}, {"optimizer_momentum", "0.9"}};
  testing::runRanksWrapped(
      4,
      [&](runtime::Communicator& comm) {
        Opened opened;
        std::unique_ptr<CompressedTensor> t;
        ASSERT_NO_FATAL_FAILURE(testing::openDirectRefusingHostMemory(comm, "big", params, opened, t));
        auto host = CompressedTensor::create(comm, "big", 1000, params);
        ASSERT_TRUE(host.isOk()) << host.status().toString();
        std::vector<float> h(1000), md(1000), mh(1000);
        float* d = static_cast<float*>(opened.kernels->allocate(1000 * sizeof(float)).value());
        for (int step = 0; step < 3; ++step) {
          for (size_t j = 0; j < 1000; ++j) h[j] = d[j] = inputOf(comm.rank(), j, step);
          if (step == 0) h[5] = d[5] = 7.5e37f;  // the average, and so M[5]
          if (step == 0 && comm.rank() == 2) {
            for (size_t j = 100; j < 108; ++j) h[j] = d[j] = 3.3e38f;  // top-8 takes these
            h[3] = d[3] = 3e38f;                                       // and leaves this in e
          }
          if (step == 1 && comm.rank() == 2) {
            h[5] = d[5] = 3.3e38f;  // + 0.9 M[5] is past f32
            h[3] = d[3] = 3e38f;    // finite + 0.9 M[3]; + e[3] is past f32 too
          }
          Status hs = host.value()->allreduce(h.data());
          Status st = t->allreduce(d);
          t->momentum(md.data());
          host.value()->momentum(mh.data());
          EXPECT_TRUE(sameBits(mh.data(), md.data(), 1000)) << "estimate, rank " << comm.rank() << " step " << step;
          if (step != 1) {
            ASSERT_TRUE(hs.isOk()) << hs.toString();
            ASSERT_TRUE(st.isOk()) << st.toString();
            EXPECT_TRUE(sameBits(h.data(), d, 1000)) << "rank " << comm.rank() << " step " << step;
            continue;
          }
          EXPECT_EQ(hs.code(), Code::kNumericError) << hs.toString();
          EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
          EXPECT_EQ(st.message(), hs.message());
          if (comm.rank() == 2) {
            EXPECT_NE(hs.message().find("element 5"), std::string::npos) << hs.message();
          }
        }
        EXPECT_EQ(opened.kernels->violations, 0);
        opened.kernels->release(d);
      },
      onTwoFakeHostsFailingFast, world.wrapper(true));
}

TEST(CompressedDirect, AHandOffSumPastF32FailsEveryRank) {
  expectHandOffPastF32FailsEveryRank("none");
  expectHandOffPastF32FailsEveryRank("vanilla");
}

// Two-level: ranks 0 and 2 share a host; their average of 1e5 at element 5 fits the f32 host
// sum (intra=none) but not the column's fp16 compressor, which only the shard's owner runs.
TEST(CompressedHierDirect, AHostAverageTheCompressorCannotTakeFailsEveryRank) {
  expectUnencodableFailsEveryRank({{{"compressor", "fp16"}, {"intra", "none"}}, {0, 2}, 0.0f, 1e5f});
}

// A step that fails in its exchange, after every rank has compressed (every rank's sends past
// the flag stage refused: a link breaking mid-step): error feedback's residual and the
// momentum stay as they were on every rank, host and direct device path alike, so the step
// redone (after a shrink) counts the gradient once. Compressing moved them on at once before.
void expectAFailedExchangeChangesNothing(const Params& extra, uint32_t stagesBeforeTheExchange, bool direct) {
  SCOPED_TRACE(std::string(direct ? "direct" : "host") + (extra.count("intra") ? ", two-level" : ", flat"));
  World world(4);
  Params params{{"algorithm", "compressed"}, {"compressor", "topk"}, {"k", "0.05"}, {"momentum", "nesterov"}};
  params.insert(extra.begin(), extra.end());
  const bool flat = !params.count("intra");
  testing::runRanksWrapped(
      4,
      [&](runtime::Communicator& comm) {
        Opened opened;
        std::unique_ptr<CompressedTensor> t;
        float* d = nullptr;
        std::vector<float> h(1000);
        if (direct) {
          ASSERT_NO_FATAL_FAILURE(testing::openDirectRefusingHostMemory(comm, "w", params, opened, t));
          d = static_cast<float*>(opened.kernels->allocate(1000 * sizeof(float)).value());
        } else {
          auto made = CompressedTensor::create(comm, "w", 1000, params);
          ASSERT_TRUE(made.isOk()) << made.status().toString();
          t = made.take();
        }
        float* g = direct ? d : h.data();
        std::vector<float> residual(1000), momentum(1000), after(1000);
        for (int step = 0; step < 2; ++step) {
          for (size_t j = 0; j < 1000; ++j) g[j] = inputOf(comm.rank(), j, step);
          t->residual(residual.data());
          t->momentum(momentum.data());
          if (step == 1) world.transports[comm.rank()]->refuseSendsFromStage(stagesBeforeTheExchange);
          Status st = t->allreduce(g);
          if (step == 0) {
            ASSERT_TRUE(st.isOk()) << st.toString();
            continue;
          }
          EXPECT_FALSE(st.isOk()) << "rank " << comm.rank();
          EXPECT_TRUE(std::any_of(residual.begin(), residual.end(), [](float v) { return v != 0.0f; }))
              << "nothing was held back before the failure";
          t->residual(after.data());
          EXPECT_TRUE(sameBits(after.data(), residual.data(), 1000)) << "residual, rank " << comm.rank();
          t->momentum(after.data());
          EXPECT_TRUE(sameBits(after.data(), momentum.data(), 1000)) << "momentum, rank " << comm.rank();
          if (flat) {
            EXPECT_TRUE(std::any_of(momentum.begin(), momentum.end(), [](float v) { return v != 0.0f; }));
          }
        }
        if (d) opened.kernels->release(d);
      },
      onTwoFakeHostsFailingFast, world.wrapper(true));
}

TEST(CompressedDirect, AStepFailingInItsExchangeLeavesResidualAndMomentum) {
  for (bool direct : {false, true}) expectAFailedExchangeChangesNothing({}, 1, direct);
}

TEST(CompressedHierDirect, AStepFailingInItsColumnExchangeLeavesTheResidual) {
  for (bool direct : {false, true}) expectAFailedExchangeChangesNothing({{"intra", "none"}}, 2, direct);
}

}  // namespace
}  // namespace tsr
