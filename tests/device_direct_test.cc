// The direct device path of Marsit (algorithms/marsit/marsit_device_step.h) over real UCX,
// ranks as threads, with fakes for what this machine lacks (tests/support/device_fakes.h): a
// "device" of host memory running the CPU kernels, and a transport wrapper that claims CUDA
// support and records what is posted as what. Checked: the path chosen (and its note), results
// and residuals bit-identical to the host path and to staging, payloads posted as kCuda, the
// step's math run by the device kernels on device memory only, no staging, and bad input named.
// No GPU and no CUDA-capable UCX are involved: the CUDA kernels themselves are not run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "algorithms/marsit/marsit.h"
#include "tests/support/device_world.h"
#include "tests/support/thread_world.h"

namespace tsr {
namespace {

constexpr int kSteps = 4;  // with full_precision_every=3, step 2 is a full-precision one

float inputOf(int rank, size_t j, int step) {
  if (j % 97 == 5) return 0.0f;  // exact zeros draw the coin
  return std::sin(0.37f * static_cast<float>(j + 1) * static_cast<float>(rank + 2) + 0.9f * step) * (1.0f + rank);
}

bool sameBits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

using testing::Opened;
using testing::World;

// kSteps on a host tensor, a direct device tensor and a staged tensor; all three must agree
// bit for bit, result and residual, at every step.
void expectDirectEqualsHostAndStaged(int n, size_t count, std::map<std::string, std::string> params,
                                     const std::function<testing::Settings(int)>& settingsOf) {
  World world(n);
  testing::runRanksWrapped(n, [&](runtime::Communicator& comm) {
    ASSERT_TRUE(comm.transportMovesCuda());
    auto host = marsit::MarsitTensor::create(comm, "w-host", count, params);
    auto direct = marsit::MarsitTensor::create(comm, "w-dev", count, params);
    auto staged = marsit::MarsitTensor::create(comm, "w-stg", count, params);
    ASSERT_TRUE(host.isOk() && direct.isOk() && staged.isOk()) << host.status().toString();
    Opened opened, stagedOpened;
    auto note = direct.value()->useDeviceMemory(opened.openers("w-dev", count));
    ASSERT_TRUE(note.isOk()) << note.status().toString();
    EXPECT_NE(note.value().find("direct device path"), std::string::npos) << note.value();
    EXPECT_NE(note.value().find("tensor w-dev"), std::string::npos) << note.value();
    EXPECT_TRUE(direct.value()->directDevice());
    EXPECT_EQ(opened.kernelOpens, 1);
    EXPECT_EQ(opened.stagingOpens, 0);
    auto stg = stagedOpened.openers("w-stg", count).staging();
    ASSERT_TRUE(stg.isOk());
    ASSERT_TRUE(staged.value()->setStaging(stg.value()).isOk());

    auto devMem = opened.kernels->allocate(count * sizeof(float));
    ASSERT_TRUE(devMem.isOk());
    float* d = static_cast<float*>(devMem.value());
    std::vector<float> h(count), s(count), rh(count), rd(count), rs(count);
    testing::RecordingTransport& wire = *world.transports[comm.rank()];
    int fullSteps = 0;
    for (int step = 0; step < kSteps; ++step) {
      for (size_t j = 0; j < count; ++j) h[j] = s[j] = d[j] = inputOf(comm.rank(), j, step);
      ASSERT_TRUE(host.value()->allreduce(h.data()).isOk());
      wire.reset();
      ASSERT_TRUE(staged.value()->allreduce(s.data()).isOk());
      EXPECT_EQ(wire.counts().cudaSends + wire.counts().cudaRecvs, 0) << "staged step posted device buffers";
      wire.reset();
      if (step == 1) {  // the non-blocking form
        auto request = direct.value()->allreduceAsync(d);
        ASSERT_TRUE(request.isOk()) << request.status().toString();
        ASSERT_TRUE(request.value()->wait().isOk());
      } else {
        Status st = direct.value()->allreduce(d);
        ASSERT_TRUE(st.isOk()) << st.toString();
      }
      testing::TransferCounts c = wire.counts();
      EXPECT_GT(c.cudaSends, 0) << "rank " << comm.rank() << " step " << step;
      EXPECT_GT(c.cudaRecvs, 0) << "rank " << comm.rank() << " step " << step;
      // In host memory only the argument headers and the 2-double scalar allreduce.
      EXPECT_LE(c.largestHost, 16u) << "rank " << comm.rank() << " step " << step;
      fullSteps += direct.value()->lastTimes().fullPrecision ? 1 : 0;
      EXPECT_TRUE(sameBits(h.data(), d, count)) << "direct vs host, rank " << comm.rank() << " step " << step;
      EXPECT_TRUE(sameBits(h.data(), s.data(), count)) << "staged vs host, rank " << comm.rank() << " step " << step;
      host.value()->residual(rh.data());
      direct.value()->residual(rd.data());
      staged.value()->residual(rs.data());
      EXPECT_TRUE(sameBits(rh.data(), rd.data(), count)) << "residual, rank " << comm.rank() << " step " << step;
      EXPECT_TRUE(sameBits(rh.data(), rs.data(), count)) << "residual, rank " << comm.rank() << " step " << step;
    }
    testing::FakeDeviceKernels& k = *opened.kernels;
    EXPECT_EQ(k.prepares, kSteps - fullSteps);
    EXPECT_EQ(k.finishes, kSteps - fullSteps);
    EXPECT_EQ(k.addScans, fullSteps);
    EXPECT_GT(k.merges, 0) << "the executor's merges did not run on the device kernels";
    if (fullSteps) {
      EXPECT_GT(k.reduces, 0) << "the full-precision step's reductions did not run on the device";
    }
    EXPECT_EQ(k.violations, 0) << "device kernels were given host memory";
    EXPECT_EQ(opened.copies->toHost + opened.copies->toDevice, 0) << "the direct tensor staged";
    EXPECT_EQ(stagedOpened.copies->toHost, kSteps);
    opened.kernels->release(d);
  }, settingsOf, world.wrapper(true));
}

TEST(DeviceDirect, RingEqualsHostAndStaged) {
  for (int n = 2; n <= 5; ++n) {
    SCOPED_TRACE("N=" + std::to_string(n));
    expectDirectEqualsHostAndStaged(n, 3001, {{"algorithm", "marsit"}, {"full_precision_every", "3"}},
                                    [](int) { return testing::Settings{{"TSR_CHUNK_BYTES", "1024"}}; });
  }
}

TEST(DeviceDirect, RingPackWholeEqualsHost) {
  expectDirectEqualsHostAndStaged(3, 1000, {{"pack", "whole"}, {"seed", "7"}}, [](int) { return testing::Settings{}; });
}

// 2 fake hosts x 2 ranks: the torus bit plan (row and column merges) on the device.
TEST(DeviceDirect, TorusEqualsHostAndStaged) {
  expectDirectEqualsHostAndStaged(4, 3001, {{"topology", "torus"}, {"full_precision_every", "3"}}, [](int rank) {
    return testing::Settings{{"TSR_TEST_HOST_ID", "fake" + std::to_string(rank % 2)}, {"TSR_CHUNK_BYTES", "1024"}};
  });
}

// Without the claimed support, memory=cuda stages and says why (every Marsit topology has a
// device step: two-level's is tested in marsit_hier_direct_test.cc).
TEST(DeviceDirect, StagesWithoutCudaSupport) {
  for (bool claim : {false}) {
    World world(4);
    testing::runRanksWrapped(4, [&](runtime::Communicator& comm) {
      EXPECT_EQ(comm.transportMovesCuda(), claim);
      std::map<std::string, std::string> params;
      auto t = marsit::MarsitTensor::create(comm, "emb", 1000, params);
      ASSERT_TRUE(t.isOk()) << t.status().toString();
      Opened opened;
      auto note = t.value()->useDeviceMemory(opened.openers("emb", 1000));
      ASSERT_TRUE(note.isOk()) << note.status().toString();
      EXPECT_FALSE(t.value()->directDevice());
      EXPECT_EQ(opened.kernelOpens, 0);
      EXPECT_EQ(opened.stagingOpens, 1);
      EXPECT_NE(note.value().find("staged through pinned host memory"), std::string::npos) << note.value();
      EXPECT_NE(note.value().find("UCX reports no CUDA memory support"), std::string::npos)
          << note.value();
      std::vector<float> d(1000), h(1000);
      for (size_t j = 0; j < d.size(); ++j) d[j] = h[j] = inputOf(comm.rank(), j, 0);
      auto host = marsit::MarsitTensor::create(comm, "emb-host", 1000, params);
      ASSERT_TRUE(host.isOk());
      ASSERT_TRUE(host.value()->allreduce(h.data()).isOk());
      world.transports[comm.rank()]->reset();
      ASSERT_TRUE(t.value()->allreduce(d.data()).isOk());
      EXPECT_TRUE(sameBits(h.data(), d.data(), d.size()));
      EXPECT_EQ(world.transports[comm.rank()]->counts().cudaSends, 0);
      EXPECT_EQ(opened.copies->toHost, 1);
    }, [](int rank) { return testing::Settings{{"TSR_TEST_HOST_ID", "fake" + std::to_string(rank % 2)}}; },
                             world.wrapper(claim));
  }
}

// A host pointer given to a direct tensor is refused naming the tensor and rank; a NaN fails
// the step on every rank naming the element, leaving the buffer and the compensation as they
// were; the memory cannot be switched once chosen and stepped.
TEST(DeviceDirect, BadInputIsNamed) {
  World world(3);
  testing::runRanksWrapped(3, [&](runtime::Communicator& comm) {
    auto t = marsit::MarsitTensor::create(comm, "emb", 1000, {});
    ASSERT_TRUE(t.isOk());
    Opened opened;
    ASSERT_TRUE(t.value()->useDeviceMemory(opened.openers("emb", 1000)).isOk());
    std::vector<float> onHost(1000, 1.0f);
    auto refused = t.value()->allreduceAsync(onHost.data());
    ASSERT_FALSE(refused.isOk());
    EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
    const std::string& m = refused.status().message();
    EXPECT_NE(m.find("device tensor emb (memory=cuda, rank " + std::to_string(comm.rank())), std::string::npos) << m;
    EXPECT_NE(m.find("host memory"), std::string::npos) << m;

    float* d = static_cast<float*>(opened.kernels->allocate(1000 * sizeof(float)).value());
    for (size_t j = 0; j < 1000; ++j) d[j] = inputOf(comm.rank(), j, 0);
    if (comm.rank() == 1) d[17] = NAN;
    std::vector<float> before(d, d + 1000);
    Status st = t.value()->allreduce(d);
    EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
    EXPECT_NE(st.message().find("marsit tensor emb"), std::string::npos) << st.toString();
    if (comm.rank() == 1) {
      EXPECT_NE(st.message().find("element 17 is nan"), std::string::npos) << st.toString();
    }
    EXPECT_TRUE(sameBits(before.data(), d, 1000)) << "rank " << comm.rank();
    std::vector<float> comp(1000);
    t.value()->residual(comp.data());
    EXPECT_TRUE(std::all_of(comp.begin(), comp.end(), [](float x) { return x == 0.0f; }));

    d[17] = 1.0f;
    ASSERT_TRUE(t.value()->allreduce(d).isOk());
    Status again = t.value()->setDeviceKernels(opened.kernels);
    EXPECT_NE(again.message().find("step 1 has run"), std::string::npos) << again.toString();
    auto stg = opened.openers("emb", 1000).staging();
    ASSERT_TRUE(stg.isOk());
    Status staged = t.value()->setStaging(stg.value());
    EXPECT_NE(staged.message().find("direct device path"), std::string::npos) << staged.toString();
    opened.kernels->release(d);
  }, [](int) { return testing::Settings{}; }, world.wrapper(true));
}

}  // namespace
}  // namespace tsr
