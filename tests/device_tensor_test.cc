// Device tensors end to end over real UCX (3 ranks as threads), with the host-memcpy fake
// copier standing in for CUDA: a tensor staged through DeviceStaging must give, bit for bit,
// the result and the residual of the same tensor on host memory. This tests the staging
// orchestration around the real Marsit / compressed / SparDL steps; no GPU is involved.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "algorithms/compressed/compressed_tensor.h"
#include "algorithms/marsit/marsit.h"
#include "algorithms/spardl/spardl.h"
#include "algorithms/team/device_staging.h"
#include "algorithms/team/tests/fake_copier.h"
#include "tests/support/thread_world.h"

namespace tsr {
namespace {

constexpr size_t kCount = 1000;
constexpr int kSteps = 3;

float inputOf(int rank, size_t j, int step) {
  return std::sin(0.37f * static_cast<float>(j + 1) * static_cast<float>(rank + 2) + 0.9f * step) * (1.0f + rank);
}

std::shared_ptr<algorithms::DeviceStaging> fakeStaging(const std::string& name,
                                                       const std::shared_ptr<testing::FakeCopierLog>& log) {
  auto made = algorithms::DeviceStaging::create(std::make_unique<testing::FakeCopier>(log), name, kCount);
  EXPECT_TRUE(made.isOk()) << made.status().toString();
  return made.take();
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Runs kSteps on a host twin and a staged twin of one handle type; `residualOf` reads one.
template <typename Handle, typename Residual>
void expectStagedEqualsHost(const std::map<std::string, std::string>& params, Residual residualOf) {
  testing::runRanks(3, [&](runtime::Communicator& comm) {
    auto host = Handle::create(comm, "w-host", kCount, params);
    auto staged = Handle::create(comm, "w-dev", kCount, params);
    ASSERT_TRUE(host.isOk() && staged.isOk()) << host.status().toString() << staged.status().toString();
    auto log = std::make_shared<testing::FakeCopierLog>();
    ASSERT_TRUE(staged.value()->setStaging(fakeStaging("w-dev", log)).isOk());
    std::vector<float> h(kCount), d(kCount);
    for (int step = 0; step < kSteps; ++step) {
      for (size_t j = 0; j < kCount; ++j) h[j] = d[j] = inputOf(comm.rank(), j, step);
      ASSERT_TRUE(host.value()->allreduce(h.data()).isOk());
      if (step == 1) {  // non-blocking form: the copies are polled on the progress thread
        auto request = staged.value()->allreduceAsync(d.data());
        ASSERT_TRUE(request.isOk()) << request.status().toString();
        ASSERT_TRUE(request.value()->wait().isOk());
      } else {
        ASSERT_TRUE(staged.value()->allreduce(d.data()).isOk());
      }
      EXPECT_TRUE(sameBits(h, d)) << "rank " << comm.rank() << " step " << step;
      EXPECT_TRUE(sameBits(residualOf(*host.value()), residualOf(*staged.value())))
          << "residual, rank " << comm.rank() << " step " << step;
    }
    EXPECT_EQ(log->toHost, kSteps);
    EXPECT_EQ(log->toDevice, kSteps);
    EXPECT_EQ(staged.value()->step(), static_cast<uint64_t>(kSteps));
  });
}

std::vector<float> marsitResidual(const marsit::MarsitTensor& t) {
  std::vector<float> r(kCount);
  t.residual(r.data());
  return r;
}
std::vector<float> compressedResidual(const compressed::CompressedTensor& t) {
  std::vector<float> r(kCount);
  t.residual(r.data());
  return r;
}
std::vector<float> spardlResidual(const spardl::SparDLTensor& t) { return t.residual(); }

TEST(DeviceTensor, MarsitStagedEqualsHost) {
  expectStagedEqualsHost<marsit::MarsitTensor>({{"algorithm", "marsit"}}, marsitResidual);
}
TEST(DeviceTensor, CompressedTopkStagedEqualsHost) {
  expectStagedEqualsHost<compressed::CompressedTensor>({{"compressor", "topk"}, {"k", "0.05"}}, compressedResidual);
}
TEST(DeviceTensor, SpardlStagedEqualsHost) {
  expectStagedEqualsHost<spardl::SparDLTensor>({{"algorithm", "spardl"}, {"density", "0.05"}}, spardlResidual);
}

// A NaN fails the step on every rank (as on host) and the device buffer keeps the gradient;
// a pointer the copier does not take as device memory is refused before anything is posted.
TEST(DeviceTensor, NanLeavesTheDeviceBufferAndBadPointersAreNamed) {
  testing::runRanks(3, [&](runtime::Communicator& comm) {
    auto t = marsit::MarsitTensor::create(comm, "emb", kCount, {});
    ASSERT_TRUE(t.isOk());
    auto log = std::make_shared<testing::FakeCopierLog>();
    ASSERT_TRUE(t.value()->setStaging(fakeStaging("emb", log)).isOk());
    std::vector<float> d(kCount, 1.0f);
    if (comm.rank() == 1) d[17] = NAN;
    std::vector<float> before = d;
    Status st = t.value()->allreduce(d.data());
    EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
    EXPECT_TRUE(sameBits(before, d)) << "rank " << comm.rank();
    EXPECT_EQ(log->toDevice, 0);
    log->rejected = d.data();
    auto refused = t.value()->allreduceAsync(d.data());
    ASSERT_FALSE(refused.isOk());
    EXPECT_NE(refused.status().message().find("device tensor emb"), std::string::npos) << refused.status().toString();
    EXPECT_EQ(log->toHost, 1);
  });
}

}  // namespace
}  // namespace tsr
