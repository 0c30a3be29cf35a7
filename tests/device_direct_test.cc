// The direct device path of Marsit (algorithms/marsit/marsit_device.h) over real UCX,
// ranks as threads, with fakes for what this machine lacks (tests/support/device_fakes.h): a
// "device" of host memory running the CPU kernels, and a transport wrapper that claims CUDA
// support and records what is posted as what. Checked: the path chosen (and its note), results
// and residuals bit-identical to the host path and to staging, payloads posted as kCuda, the
// step's math run by the device kernels on device memory only, no staging, and bad input named.
// No GPU and no CUDA-capable UCX are involved: the CUDA kernels themselves are not run.
// The checks every direct path test shares are in tests/support/direct_path_checks.h.
#include <gtest/gtest.h>

#include <cmath>

#include "algorithms/marsit/marsit.h"
#include "tests/support/direct_path_checks.h"

namespace tsr {
namespace {

constexpr int kSteps = 4;  // with full_precision_every=3, step 2 is a full-precision one

float inputOf(int rank, size_t j, int step) {
  if (j % 97 == 5) return 0.0f;  // exact zeros draw the coin
  return std::sin(0.37f * static_cast<float>(j + 1) * static_cast<float>(rank + 2) + 0.9f * step) * (1.0f + rank);
}

using marsit::MarsitTensor;
using testing::Opened;
using testing::sameBits;
using testing::World;

// kSteps on a host tensor, a direct device tensor and a staged tensor; all three must agree
// bit for bit, result and residual, at every step.
void expectDirectEqualsHostAndStaged(int n, size_t count, const testing::Params& params,
                                     const std::function<testing::Settings(int)>& settingsOf) {
  World world(n);
  testing::runRanksWrapped(
      n,
      [&](runtime::Communicator& comm) {
        ASSERT_TRUE(comm.transportMovesCuda());
        testing::DirectHostStaged<MarsitTensor> t;
        ASSERT_NO_FATAL_FAILURE(testing::openDirectHostStaged(comm, "w", count, params, t));
        testing::RecordingTransport& wire = *world.transports[comm.rank()];
        std::vector<float> rh;
        int fullSteps = 0;
        for (int step = 0; step < kSteps; ++step) {
          testing::TransferCounts c;
          ASSERT_NO_FATAL_FAILURE(testing::stepAllThree(t, wire, comm.rank(), step, inputOf, c));
          // In host memory only the argument headers and the 2-double scalar allreduce.
          testing::expectPayloadsOnDevice(c, comm.rank(), step);
          fullSteps += t.direct->lastTimes().fullPrecision ? 1 : 0;
          testing::expectSameResultsAndResiduals(t, comm.rank(), step, rh);
          if (step == 1) {
            ASSERT_NO_FATAL_FAILURE(testing::relayoutResidualOnAllThree(t, comm.rank()));
          }
        }
        testing::FakeDeviceKernels& k = *t.opened.kernels;
        EXPECT_EQ(k.prepares, kSteps - fullSteps);
        EXPECT_EQ(k.finishes, kSteps - fullSteps);
        EXPECT_EQ(k.addScans, fullSteps);
        EXPECT_GT(k.merges, 0) << "the executor's merges did not run on the device kernels";
        if (fullSteps) {
          EXPECT_GT(k.reduces, 0) << "the full-precision step's reductions did not run on the device";
        }
        testing::expectDeviceOnlyAndNoStaging(t, kSteps);
      },
      settingsOf, world.wrapper(true));
}

TEST(DeviceDirect, RingEqualsHostAndStaged) {
  for (int n = 2; n <= 5; ++n) {
    SCOPED_TRACE("N=" + std::to_string(n));
    expectDirectEqualsHostAndStaged(n, 3001, {{"algorithm", "marsit"}, {"full_precision_every", "3"}},
                                    [](int) { return testing::withSmallChunks({}); });
  }
}

TEST(DeviceDirect, RingPackWholeEqualsHost) {
  expectDirectEqualsHostAndStaged(3, 1000, {{"pack", "whole"}, {"seed", "7"}}, [](int) { return testing::Settings{}; });
}

// 2 fake hosts x 2 ranks: the torus bit plan (row and column merges) on the device.
TEST(DeviceDirect, TorusEqualsHostAndStaged) {
  expectDirectEqualsHostAndStaged(4, 3001, {{"topology", "torus"}, {"full_precision_every", "3"}},
                                  [](int rank) { return testing::withSmallChunks(testing::onFakeHosts(rank, 2)); });
}

// Without the claimed support, memory=cuda stages and says why (every Marsit topology has a
// device step: two-level's is tested in marsit_hier_direct_test.cc).
TEST(DeviceDirect, StagesWithoutCudaSupport) {
  for (bool claim : {false}) {
    World world(4);
    testing::runRanksWrapped(
        4,
        [&](runtime::Communicator& comm) {
          EXPECT_EQ(comm.transportMovesCuda(), claim);
          Opened opened;
          testing::expectStagesAndEqualsHost<MarsitTensor>(comm, {}, "UCX reports no CUDA memory support",
                                                           *world.transports[comm.rank()], inputOf, opened);
        },
        [](int rank) { return testing::onFakeHosts(rank, 2); }, world.wrapper(claim));
  }
}

// A host pointer given to a direct tensor is refused naming the tensor and rank; a NaN fails
// the step on every rank naming the element, leaving the buffer and the compensation as they
// were; the memory cannot be switched once chosen and stepped.
TEST(DeviceDirect, BadInputIsNamed) {
  World world(3);
  testing::runRanksWrapped(
      3,
      [&](runtime::Communicator& comm) {
        Opened opened;
        std::unique_ptr<MarsitTensor> t;
        ASSERT_NO_FATAL_FAILURE(testing::openDirectRefusingHostMemory(comm, "emb", {}, opened, t));

        float* d = static_cast<float*>(opened.kernels->allocate(1000 * sizeof(float)).value());
        for (size_t j = 0; j < 1000; ++j) d[j] = inputOf(comm.rank(), j, 0);
        if (comm.rank() == 1) d[17] = NAN;
        std::vector<float> before(d, d + 1000);
        Status st = t->allreduce(d);
        EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
        EXPECT_NE(st.message().find("marsit tensor emb"), std::string::npos) << st.toString();
        if (comm.rank() == 1) {
          EXPECT_NE(st.message().find("element 17 is nan"), std::string::npos) << st.toString();
        }
        EXPECT_TRUE(sameBits(before.data(), d, 1000)) << "rank " << comm.rank();
        std::vector<float> comp(1000);
        t->residual(comp.data());
        EXPECT_TRUE(std::all_of(comp.begin(), comp.end(), [](float x) { return x == 0.0f; }));

        d[17] = 1.0f;
        ASSERT_TRUE(t->allreduce(d).isOk());
        ASSERT_NO_FATAL_FAILURE(testing::expectMemoryFixedAfterSteps(*t, opened, "emb", 1));
        opened.kernels->release(d);
      },
      [](int) { return testing::Settings{}; }, world.wrapper(true));
}

}  // namespace
}  // namespace tsr
