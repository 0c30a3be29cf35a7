// The direct device path of the two-level CompressedTensor (algorithms/compressed/
// compressed_hier_device.h) over real UCX, ranks as threads on fake hosts
// (TSR_TEST_HOST_ID), with the fakes of tests/support/device_fakes.h (a "device" of host memory
// running the CPU kernels; a transport wrapper claiming CUDA support and recording what is
// posted as what). Checked, for intra=none and intra=fp16 on 2x2, 3x2 and 2x3 grids and the
// compressors with a device form (with and without error feedback): results and residuals (f16
// cast residual plus X times the shard's EF error) bit-identical to host and staged tensors over
// several steps, payloads and blocks posted as kCuda, the math on the fake device only, no
// staging; staging without the claimed support; a host pointer, a NaN and an f16 overflow named.
// No GPU and no CUDA-capable UCX are involved: the CUDA kernels themselves are not run.
// The checks every direct path test shares are in tests/support/direct_path_checks.h.
#include <gtest/gtest.h>

#include <cmath>

#include "algorithms/compressed/compressed_tensor.h"
#include "tests/support/direct_path_checks.h"

namespace tsr {
namespace {

using compressed::CompressedTensor;
using testing::Opened;
using testing::Params;
using testing::sameBits;
using testing::World;

constexpr int kSteps = 4;

constexpr testing::InputOf inputOf = testing::compressedInputOf;

testing::Settings onHost(int rank, int hosts) { return testing::withSmallChunks(testing::onFakeHosts(rank, hosts)); }

void expectDirectEqualsHostAndStaged(int n, int hosts, size_t count, Params params) {
  params["algorithm"] = "compressed";
  std::string trace = "N=" + std::to_string(n) + " hosts=" + std::to_string(hosts) + " count=" + std::to_string(count);
  for (const auto& [key, value] : params) trace += " " + key + "=" + value;
  SCOPED_TRACE(trace);
  const bool f16 = params.at("intra") == "fp16";
  World world(n);
  testing::runRanksWrapped(
      n,
      [&](runtime::Communicator& comm) {
        ASSERT_TRUE(comm.transportMovesCuda());
        testing::DirectHostStaged<CompressedTensor> t;
        ASSERT_NO_FATAL_FAILURE(testing::openDirectHostStaged(comm, "h", count, params, t));
        ASSERT_EQ(t.direct->algorithm().rfind("compressed-2level", 0), 0u) << t.direct->algorithm();
        testing::RecordingTransport& wire = *world.transports[comm.rank()];
        std::vector<float> rh;
        bool residualSeen = false;
        for (int step = 0; step < kSteps; ++step) {
          testing::TransferCounts c;
          ASSERT_NO_FATAL_FAILURE(testing::stepAllThree(t, wire, comm.rank(), step, inputOf, c));
          testing::expectPayloadsOnDevice(c, comm.rank(), step);  // in host memory the flags only
          testing::expectSameResultsAndResiduals(t, comm.rank(), step, rh);
          if (step == 1) {
            ASSERT_NO_FATAL_FAILURE(testing::relayoutResidualOnAllThree(t, comm.rank()));
          }
          for (float r : rh) residualSeen |= r != 0.0f;
        }
        const bool ef = !params.count("ef") || params.at("ef") == "vanilla";
        if (count > 100 && (f16 || (ef && params.at("compressor") != "none"))) {
          EXPECT_TRUE(residualSeen) << "nothing was ever kept back: the residual is not tested";
        }
        testing::FakeDeviceKernels& k = *t.opened.kernels;
        if (count > 100) {  // x = g + q (and the codec's g + e twice, checked then compressed: a tiny
                            // tensor's empty shard has no codec)
          EXPECT_EQ(k.addScans, kSteps * (ef ? 3 : 1));
        } else {
          EXPECT_GE(k.addScans, kSteps);
        }
        EXPECT_EQ(k.scales, kSteps) << "the column average did not run on the device";
        EXPECT_GT(k.reduces, 0) << "the host average and the payload sums did not run on the device";
        if (f16) {
          EXPECT_GE(k.casts, 3 * kSteps) << "the f16 casts did not run on the device kernels";
          EXPECT_GE(k.efKeeps, kSteps) << "the f16 cast residual was not taken on the device";
        }
        testing::expectDeviceOnlyAndNoStaging(t, kSteps);
      },
      [hosts](int rank) { return onHost(rank, hosts); }, world.wrapper(true));
}

void grids(Params params, size_t count = 3001) {
  for (const char* intra : {"none", "fp16"}) {
    params["intra"] = intra;
    expectDirectEqualsHostAndStaged(4, 2, count, params);  // 2 hosts x 2 ranks
    expectDirectEqualsHostAndStaged(6, 3, count, params);  // 3 hosts x 2 ranks
    expectDirectEqualsHostAndStaged(6, 2, count, params);  // 2 hosts x 3 ranks
  }
}

TEST(CompressedHierDirect, NoneEqualsHostAndStaged) { grids({{"compressor", "none"}, {"ef", "none"}}); }
TEST(CompressedHierDirect, Fp16EqualsHostAndStaged) { grids({{"compressor", "fp16"}}); }
TEST(CompressedHierDirect, TopkEqualsHostAndStaged) { grids({{"compressor", "topk"}, {"k", "0.01"}}); }
TEST(CompressedHierDirect, RandomkEqualsHostAndStaged) {
  grids({{"compressor", "randomk"}, {"k", "30"}, {"seed", "5"}, {"ef", "none"}});
}
TEST(CompressedHierDirect, OnebitEqualsHostAndStaged) { grids({{"compressor", "onebit"}}); }
TEST(CompressedHierDirect, DitheringEqualsHostAndStaged) { grids({{"compressor", "dithering"}, {"k", "5"}}); }
TEST(CompressedHierDirect, DitheringL2EqualsHostAndStaged) {
  grids({{"compressor", "dithering"}, {"k", "5"}, {"dithering_normalize", "l2"}, {"momentum", "nesterov"}});
}
// 1 element on 2 ranks a host: the second column's shard is empty (no compressor there).
TEST(CompressedHierDirect, TinyTensorsEqualHostAndStaged) {
  for (size_t count : {1, 3}) grids({{"compressor", "topk"}, {"k", "1"}}, count);
}

// Without the claimed support, a two-level memory=cuda tensor stages and says why.
TEST(CompressedHierDirect, StagesWithoutCudaSupport) {
  World world(4);
  testing::runRanksWrapped(
      4,
      [&](runtime::Communicator& comm) {
        EXPECT_FALSE(comm.transportMovesCuda());
        Opened opened;
        testing::expectStagesAndEqualsHost<CompressedTensor>(
            comm, {{"algorithm", "compressed"}, {"compressor", "fp16"}, {"intra", "fp16"}},
            "UCX reports no CUDA memory support", *world.transports[comm.rank()], inputOf, opened);
      },
      [](int rank) { return onHost(rank, 2); }, world.wrapper(false));
}

// A host pointer is refused naming the tensor and rank; a NaN and an f16 overflow fail the step
// on every rank with the host tensor's message, the buffer unchanged, and the next step equals
// the host tensor's (state unchanged by the failed ones).
TEST(CompressedHierDirect, BadInputIsNamed) {
  World world(4);
  testing::runRanksWrapped(
      4,
      [&](runtime::Communicator& comm) {
        Params params{{"algorithm", "compressed"}, {"compressor", "topk"}, {"k", "0.05"}, {"intra", "fp16"}};
        Opened opened;
        std::unique_ptr<CompressedTensor> t;
        ASSERT_NO_FATAL_FAILURE(testing::openDirectRefusingHostMemory(comm, "emb", params, opened, t));
        auto host = CompressedTensor::create(comm, "emb", 1000, params);  // the same name: the same messages
        ASSERT_TRUE(host.isOk());

        float* d = static_cast<float*>(opened.kernels->allocate(1000 * sizeof(float)).value());
        std::vector<float> h(1000), rh(1000), rd(1000);
        for (int step = 0; step < 4; ++step) {
          for (size_t j = 0; j < 1000; ++j) h[j] = d[j] = inputOf(comm.rank(), j, step);
          if (step == 0 && comm.rank() == 1) h[17] = d[17] = NAN;
          if (step == 1 && comm.rank() == 2) h[40] = d[40] = 1e6f;  // finite, beyond f16
          std::vector<float> before(d, d + 1000);
          Status hs = host.value()->allreduce(h.data());
          Status st = t->allreduce(d);
          if (step < 2) {
            EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
            EXPECT_EQ(st.message(), hs.message());
            EXPECT_NE(st.message().find("compressed tensor emb"), std::string::npos) << st.toString();
            if (step == 0 && comm.rank() == 1) {
              EXPECT_NE(st.message().find("element 17 is nan"), std::string::npos) << st.toString();
            }
            if (step == 1 && comm.rank() == 2) {
              EXPECT_NE(st.message().find("element 40 is 1000000.000000, beyond f16"), std::string::npos)
                  << st.toString();
            }
            EXPECT_TRUE(sameBits(before.data(), d, 1000)) << "rank " << comm.rank();
          } else {
            ASSERT_TRUE(st.isOk()) << st.toString();
            EXPECT_TRUE(sameBits(h.data(), d, 1000)) << "after the failed steps, rank " << comm.rank();
          }
          host.value()->residual(rh.data());
          t->residual(rd.data());
          EXPECT_TRUE(sameBits(rh.data(), rd.data(), 1000)) << "residual, rank " << comm.rank() << " step " << step;
        }
        EXPECT_EQ(opened.kernels->violations, 0);
        opened.kernels->release(d);
      },
      [](int rank) { return onHost(rank, 2); }, world.wrapper(true));
}

}  // namespace
}  // namespace tsr
