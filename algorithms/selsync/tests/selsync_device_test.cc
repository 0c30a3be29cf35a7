// SelSync on device (memory=cuda) buckets over real UCX (ranks as threads), with the
// host-memcpy fake copier standing in for CUDA (its copies land only after some polls, as
// asynchronous ones would): synchronized steps give the host path's exact averages, local
// steps copy nothing, the copies wait for the caller's stream, a bucket the copier refuses is
// named before anything is sent, and a failed copy leaves the step to be redone. The
// communicator itself is in device mode too (its users' calls staged by another fake): SelSync's
// own allreduces stay on the host. No GPU is involved.
#include <gtest/gtest.h>

#include "algorithms/selsync/selsync.h"
#include "algorithms/team/tests/fake_copier.h"
#include "runtime/communicator.h"
#include "tests/support/thread_world.h"

namespace tsr::selsync {
namespace {

using testing::FakeCopier;
using testing::FakeCopierLog;

StagingOpener fakeOpener(std::shared_ptr<FakeCopierLog> log) {
  return [log](const std::string& name, size_t count) {
    return algorithms::DeviceStaging::create(std::make_unique<FakeCopier>(log), name, count);
  };
}

struct DeviceRank {
  std::shared_ptr<FakeCopierLog> selsync = std::make_shared<FakeCopierLog>();
  std::shared_ptr<FakeCopierLog> comm = std::make_shared<FakeCopierLog>();
  std::vector<std::vector<float>> model{std::vector<float>(5), std::vector<float>(), std::vector<float>(3000)};
  std::vector<float*> buckets() {
    std::vector<float*> out;
    for (auto& b : model) out.push_back(b.data());
    return out;
  }
  void fill(int rank, int step) {
    for (auto& b : model)
      for (size_t j = 0; j < b.size(); ++j) b[j] = static_cast<float>(rank * 10 + step + j % 7);
  }
};

int kFakeStream = 0;  // its address stands for the caller's cudaStream_t

TEST(SelSyncDevice, StagedBucketsAverageExactlyAndLocalStepsCopyNothing) {
  const int n = 3;
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    const int me = comm.rank();
    DeviceRank d;
    ASSERT_TRUE(comm.useDeviceCopier(std::make_unique<FakeCopier>(d.comm)).isOk());
    comm.setCallerStream(&kFakeStream);
    auto s = SelSync::create(comm, {{"delta", "0.5"}, {"ewma_window", "1"}, {"memory", "cuda"}}, {5, 0, 3000},
                             fakeOpener(d.selsync));
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    for (int step = 0; step < 6; ++step) {
      d.fill(me, step);
      const int toHost = d.selsync->toHost, toDevice = d.selsync->toDevice;
      // Rank 0's norm jumps at step 2 and falls back at 3: those two synchronize everyone.
      auto r = s.value()->step(me == 0 && step == 2 ? 80.0 : 10.0, d.buckets());
      ASSERT_TRUE(r.isOk()) << r.status().toString();
      ASSERT_EQ(r.value().synchronized, step == 2 || step == 3) << "step " << step;
      const int copies = r.value().synchronized ? 2 : 0;  // the empty bucket is not copied
      EXPECT_EQ(d.selsync->toHost - toHost, copies) << "step " << step;
      EXPECT_EQ(d.selsync->toDevice - toDevice, copies) << "step " << step;
      for (auto& b : d.model)
        for (size_t j = 0; j < b.size(); ++j)
          ASSERT_EQ(b[j], r.value().synchronized ? 10.0f * (n - 1) / 2 + step + j % 7 : me * 10 + step + j % 7)
              << "step " << step << " element " << j;
    }
    for (void* waited : d.selsync->waitedOn) EXPECT_EQ(waited, &kFakeStream);
    EXPECT_EQ(d.comm->toHost, 0) << "SelSync's flags and average went through the communicator's device staging";
    EXPECT_EQ(s.value()->stats().syncSteps, 2u);
  });
}

// Named on the rank, with nothing of the buckets sent: only the step's flag exchange, which
// tells every rank that this one could not take part.
TEST(SelSyncDevice, ABucketTheCopierRefusesIsNamedBeforeAnyBucketIsSent) {
  testing::runRanks(2, [&](runtime::Communicator& comm) {
    DeviceRank d;
    auto s = SelSync::create(comm, {{"delta", "0"}, {"memory", "cuda"}}, {5, 0, 3000}, fakeOpener(d.selsync));
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    d.selsync->rejected = d.model[2].data();
    const uint64_t before = comm.bytesSent();
    auto r = s.value()->step(1.0, d.buckets());
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find("selsync memory=cuda: bucket 2 (3000 floats)"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("not CUDA device memory"), std::string::npos) << r.status().message();
    EXPECT_LT(comm.bytesSent() - before, 1000u) << "more than the flag exchange went out";
  });
}

TEST(SelSyncDevice, AFailedCopyLeavesTheBucketsAndTheStepToBeRedone) {
  const int n = 2;
  testing::runRanks(n, [&](runtime::Communicator& comm) {
    const int me = comm.rank();
    DeviceRank d;
    auto s = SelSync::create(comm, {{"delta", "0.5"}, {"ewma_window", "1"}, {"memory", "cuda"}}, {5, 0, 3000},
                             fakeOpener(d.selsync));
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    d.fill(me, 0);
    ASSERT_TRUE(s.value()->step(10.0, d.buckets()).isOk());
    // Every rank's copy to the host fails at the synchronized step: nothing was averaged.
    d.fill(me, 1);
    d.selsync->failCopy = true;
    auto failed = s.value()->step(me == 0 ? 80.0 : 10.0, d.buckets());
    ASSERT_FALSE(failed.isOk());
    EXPECT_NE(failed.status().message().find("selsync memory=cuda: fake copy failed"), std::string::npos)
        << failed.status().message();
    EXPECT_EQ(d.model[2][3], me * 10 + 1 + 3);
    EXPECT_EQ(s.value()->stats().syncSteps, 0u);
    // Redone with the same norm, it measures the same change (the failed step was rolled back).
    auto redone = s.value()->step(me == 0 ? 80.0 : 10.0, d.buckets());
    ASSERT_TRUE(redone.isOk()) << redone.status().toString();
    EXPECT_TRUE(redone.value().synchronized);
    EXPECT_EQ(d.model[2][3], 10.0f * (n - 1) / 2 + 1 + 3);
    EXPECT_EQ(d.selsync->pinnedLive, 1);
  });
}

TEST(SelSyncDevice, MemoryParameterIsCheckedAndCudaNeedsADevice) {
  testing::runRanks(1, [&](runtime::Communicator& comm) {
    auto bad = SelSync::create(comm, {{"memory", "gpu"}}, {4});
    ASSERT_FALSE(bad.isOk());
    EXPECT_NE(bad.status().message().find("selsync: memory=gpu is not accepted (host|cuda)"), std::string::npos)
        << bad.status().message();
    // This machine has no CUDA device (or Tessera was built without CUDA): refused by name.
    auto cuda = SelSync::create(comm, {{"memory", "cuda"}}, {4}, [](const std::string&, size_t) {
      return Result<std::shared_ptr<algorithms::DeviceStaging>>(Status(Code::kNotSupported, "no CUDA device (test)"));
    });
    ASSERT_FALSE(cuda.isOk());
    EXPECT_EQ(cuda.status().code(), Code::kNotSupported);
    EXPECT_EQ(cuda.status().message(), "selsync memory=cuda: no CUDA device (test)");
    EXPECT_TRUE(SelSync::create(comm, {{"memory", "host"}}, {4}).isOk());
  });
}

}  // namespace
}  // namespace tsr::selsync
