// The direct device path of two-level Marsit (algorithms/marsit/marsit_hier_step.h)
// over real UCX, ranks as threads on fake hosts (TSR_TEST_HOST_ID), with the fakes of
// tests/support/device_fakes.h: a "device" of host memory running the CPU kernels and a
// transport wrapper that claims CUDA support and records what is posted as what. Checked, for
// intra=none and intra=fp16 on 2x2, 2x3 and 3x2 grids: results, f16 residuals and row block
// compensations bit-identical to host and staged tensors over several steps (a full-precision
// one among them), payloads posted as kCuda, the math on the fake device only, no staging;
// staging without the claimed support; a host pointer and a NaN named.
// No GPU and no CUDA-capable UCX are involved: the CUDA kernels themselves are not run.
// The checks every direct path test shares are in tests/support/direct_path_checks.h.
#include <gtest/gtest.h>

#include <cmath>

#include "algorithms/marsit/marsit.h"
#include "tests/support/direct_path_checks.h"

namespace tsr {
namespace {

constexpr int kSteps = 5;  // with full_precision_every=3, step 2 is a full-precision one

float inputOf(int rank, size_t j, int step) {
  if (j % 97 == 5) return 0.0f;  // exact zeros draw the coin
  return std::sin(0.37f * static_cast<float>(j + 1) * static_cast<float>(rank + 2) + 0.9f * step) * (1.0f + rank) *
         1.001f;
}

using marsit::MarsitTensor;
using testing::Opened;
using testing::sameBits;
using testing::World;

testing::Settings onHost(int rank, int hosts) { return testing::withSmallChunks(testing::onFakeHosts(rank, hosts)); }

void expectDirectEqualsHostAndStaged(int n, int hosts, size_t count, testing::Params params) {
  SCOPED_TRACE("N=" + std::to_string(n) + " hosts=" + std::to_string(hosts) + " count=" + std::to_string(count) +
               " intra=" + params["intra"]);
  const bool f16 = params["intra"] == "fp16";
  World world(n);
  testing::runRanksWrapped(
      n,
      [&](runtime::Communicator& comm) {
        ASSERT_TRUE(comm.transportMovesCuda());
        testing::DirectHostStaged<MarsitTensor> t;
        ASSERT_NO_FATAL_FAILURE(testing::openDirectHostStaged(comm, "h", count, params, t));
        ASSERT_EQ(t.direct->algorithm(), "marsit-2level");
        testing::RecordingTransport& wire = *world.transports[comm.rank()];
        std::vector<float> rh;
        int fullSteps = 0;
        bool residualSeen = false;
        for (int step = 0; step < kSteps; ++step) {
          testing::TransferCounts c;
          ASSERT_NO_FATAL_FAILURE(testing::stepAllThree(t, wire, comm.rank(), step, inputOf, c));
          testing::expectPayloadsOnDevice(c, comm.rank(), step);  // in host memory the scalars only
          fullSteps += t.direct->lastTimes().fullPrecision ? 1 : 0;
          // The parts apart (f16 residual, row block compensation), then their sum.
          EXPECT_EQ(t.host->intraResidual(), t.direct->intraResidual()) << "rank " << comm.rank();
          EXPECT_EQ(t.host->compensation(), t.direct->compensation()) << "rank " << comm.rank();
          testing::expectSameResultsAndResiduals(t, comm.rank(), step, rh);
          for (float r : t.host->intraResidual()) residualSeen |= r != 0.0f;
          if (step == 1) {
            ASSERT_NO_FATAL_FAILURE(testing::relayoutResidualOnAllThree(t, comm.rank()));
          }
        }
        EXPECT_EQ(residualSeen, f16) << "the f16 cast residual was never exercised (or intra=none kept one)";
        testing::FakeDeviceKernels& k = *t.opened.kernels;
        EXPECT_EQ(fullSteps, 1);
        EXPECT_EQ(k.packs, kSteps - fullSteps);     // the row block's sign words
        EXPECT_EQ(k.finishes, kSteps - fullSteps);  // c = s' - G
        EXPECT_EQ(k.unpacks, kSteps - fullSteps);   // G into g
        EXPECT_EQ(k.addScans, kSteps);              // x = g + r
        EXPECT_GT(k.reduces, 0) << "the intra-host average did not run on the device kernels";
        if (count > 64 * static_cast<size_t>(n)) {  // a tiny tensor's bit plan may merge nothing
          EXPECT_GT(k.merges, 0) << "the executor's merges did not run on the device kernels";
        }
        if (f16) {
          EXPECT_GE(k.casts, 3 * (kSteps - fullSteps)) << "the f16 casts did not run on the device kernels";
        }
        testing::expectDeviceOnlyAndNoStaging(t, kSteps);
      },
      [hosts](int rank) { return onHost(rank, hosts); }, world.wrapper(true));
}

TEST(MarsitHierDirect, IntraNoneEqualsHostAndStaged) {
  expectDirectEqualsHostAndStaged(4, 2, 3001, {{"intra", "none"}, {"full_precision_every", "3"}});
  expectDirectEqualsHostAndStaged(6, 3, 3001, {{"intra", "none"}, {"full_precision_every", "3"}});
}

TEST(MarsitHierDirect, IntraFp16EqualsHostAndStaged) {
  expectDirectEqualsHostAndStaged(4, 2, 3001, {{"intra", "fp16"}, {"full_precision_every", "3"}});
  expectDirectEqualsHostAndStaged(6, 3, 3001, {{"intra", "fp16"}, {"full_precision_every", "3"}});
  expectDirectEqualsHostAndStaged(6, 2, 1000, {{"intra", "fp16"}, {"full_precision_every", "3"}, {"seed", "9"}});
}

TEST(MarsitHierDirect, PackWholeAndTinyEqualHostAndStaged) {
  expectDirectEqualsHostAndStaged(4, 2, 3001, {{"intra", "fp16"}, {"pack", "whole"}, {"full_precision_every", "3"}});
  expectDirectEqualsHostAndStaged(4, 2, 3, {{"intra", "fp16"}, {"full_precision_every", "3"}});  // mostly padding
}

// Without the claimed support, a two-level memory=cuda tensor stages and says why.
TEST(MarsitHierDirect, StagesWithoutCudaSupport) {
  World world(4);
  testing::runRanksWrapped(
      4,
      [&](runtime::Communicator& comm) {
        EXPECT_FALSE(comm.transportMovesCuda());
        Opened opened;
        testing::expectStagesAndEqualsHost<MarsitTensor>(comm, {{"intra", "fp16"}},
                                                         "UCX reports no CUDA memory support",
                                                         *world.transports[comm.rank()], inputOf, opened);
      },
      [](int rank) { return onHost(rank, 2); }, world.wrapper(false));
}

// A host pointer is refused naming the tensor and rank; a NaN fails the step on every rank
// naming the element on the rank that had it, leaving the buffer as it was, and the next
// step still equals the host tensor's (which saw the same NaN).
TEST(MarsitHierDirect, BadInputIsNamed) {
  World world(4);
  testing::runRanksWrapped(
      4,
      [&](runtime::Communicator& comm) {
        const testing::Params params{{"intra", "fp16"}};
        Opened opened;
        std::unique_ptr<MarsitTensor> t;
        ASSERT_NO_FATAL_FAILURE(testing::openDirectRefusingHostMemory(comm, "emb", params, opened, t));
        auto host = MarsitTensor::create(comm, "emb-host", 1000, params);
        ASSERT_TRUE(host.isOk());

        float* d = static_cast<float*>(opened.kernels->allocate(1000 * sizeof(float)).value());
        std::vector<float> h(1000);
        for (int step = 0; step < 2; ++step) {
          for (size_t j = 0; j < 1000; ++j) h[j] = d[j] = inputOf(comm.rank(), j, step);
          if (step == 0 && comm.rank() == 1) h[17] = d[17] = NAN;
          std::vector<float> before(d, d + 1000);
          Status hs = host.value()->allreduce(h.data());
          Status st = t->allreduce(d);
          if (step == 0) {
            EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
            EXPECT_EQ(hs.code(), Code::kNumericError) << hs.toString();
            EXPECT_NE(st.message().find("marsit tensor emb"), std::string::npos) << st.toString();
            if (hs.message().find("element 17 is nan") != std::string::npos) {
              EXPECT_NE(st.message().find("element 17 is nan"), std::string::npos) << st.toString();
            }
            EXPECT_TRUE(sameBits(before.data(), d, 1000)) << "rank " << comm.rank();
          } else {
            ASSERT_TRUE(st.isOk()) << st.toString();
            EXPECT_TRUE(sameBits(h.data(), d, 1000)) << "after the failed step, rank " << comm.rank();
          }
          EXPECT_EQ(host.value()->intraResidual(), t->intraResidual()) << "rank " << comm.rank();
        }
        EXPECT_EQ(opened.kernels->violations, 0);
        opened.kernels->release(d);
      },
      [](int rank) { return onHost(rank, 2); }, world.wrapper(true));
}

}  // namespace
}  // namespace tsr
