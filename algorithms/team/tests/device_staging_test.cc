// DeviceStaging's orchestration with the host-memcpy fake copier (fake_copier.h): a unit test
// of the order copy-in -> host step -> copy-out, of polling, and of the errors. No GPU is
// involved; the real CUDA copier is only compiled here.
#include <gtest/gtest.h>

#include <vector>

#include "algorithms/team/device_path.h"
#include "algorithms/team/device_staging.h"
#include "algorithms/team/tests/fake_copier.h"
#include "transport/testing/stub_transport.h"
#include "transport/transport.h"

namespace tsr::algorithms {
namespace {

using testing::FakeCopier;
using testing::FakeCopierLog;

// The host step: doubles the staged buffer over `steps` progress calls, or fails. It records
// what the buffer held when it started, to prove the copy-in had finished by then.
struct StepProbe {
  std::vector<float> sawAtStart;
  bool fail = false;
  bool aborted = false;
};

class DoublingStep final : public algorithms::Task {
 public:
  DoublingStep(float* host, size_t count, StepProbe* probe) : host_(host), count_(count), probe_(probe) {}
  Status start() override {
    probe_->sawAtStart.assign(host_, host_ + count_);
    return Status(Code::kInProgress, "");
  }
  Status progress() override {
    if (++calls_ < 2) return Status(Code::kInProgress, "");
    if (probe_->fail) return Status(Code::kNumericError, "NaN in the step");
    for (size_t i = 0; i < count_; ++i) host_[i] *= 2.0f;
    return Status::ok();
  }
  void abort(const Status&) override { probe_->aborted = true; }
  bool quiescent() const override { return true; }
  int waitingOn() const override { return 3; }
  std::string describe() const override { return "doubling"; }

 private:
  float* host_;
  size_t count_;
  StepProbe* probe_;
  int calls_ = 0;
};

struct Fixture {
  std::shared_ptr<FakeCopierLog> log = std::make_shared<FakeCopierLog>();
  std::shared_ptr<DeviceStaging> staging;
  StepProbe probe;
  std::vector<float> device{1.0f, -2.0f, 3.5f, 0.25f, 7.0f};

  Fixture() {
    auto made = DeviceStaging::create(std::make_unique<FakeCopier>(log), "w", device.size());
    EXPECT_TRUE(made.isOk()) << made.status().toString();
    staging = made.take();
  }
  std::unique_ptr<algorithms::Task> task(transport::Transport& t) {
    algorithms::TaskFactory hostStep =
        [this](const algorithms::TaskContext&) -> Result<std::unique_ptr<algorithms::Task>> {
      return std::unique_ptr<algorithms::Task>(new DoublingStep(staging->host(), staging->count(), &probe));
    };
    algorithms::TaskContext ctx{t, {}, 1, 1};
    return staging->wrap(device.data(), hostStep)(ctx).take();
  }
};

// Drives a task like the progress thread; returns the final status and the InProgress count.
Status drive(algorithms::Task& task, int* polls) {
  Status st = task.start();
  *polls = 0;
  while (st.code() == Code::kInProgress && *polls < 100) {
    ++*polls;
    st = task.progress();
  }
  return st;
}

// The staged tasks here never touch the transport; TaskContext only needs one to refer to.
transport::Transport& noTransport() {
  static transport::testing::StubTransport inert;
  return inert;
}

TEST(DeviceStaging, CopiesInRunsTheHostStepCopiesBack) {
  Fixture f;
  auto task = f.task(noTransport());
  int polls = 0;
  ASSERT_TRUE(drive(*task, &polls).isOk());
  EXPECT_EQ(f.probe.sawAtStart, (std::vector<float>{1.0f, -2.0f, 3.5f, 0.25f, 7.0f}));
  EXPECT_EQ(f.device, (std::vector<float>{2.0f, -4.0f, 7.0f, 0.5f, 14.0f}));
  EXPECT_EQ(f.log->toHost, 1);
  EXPECT_EQ(f.log->toDevice, 1);
  EXPECT_GE(polls, 2 + 2 + 1);  // both copies were polled, never waited for
  EXPECT_TRUE(task->quiescent());
  EXPECT_NE(task->describe().find("device tensor w"), std::string::npos) << task->describe();
}

TEST(DeviceStaging, AFailedHostStepLeavesTheDeviceBufferAlone) {
  Fixture f;
  f.probe.fail = true;
  auto task = f.task(noTransport());
  int polls = 0;
  Status st = drive(*task, &polls);
  EXPECT_EQ(st.code(), Code::kNumericError) << st.toString();
  EXPECT_EQ(f.device, (std::vector<float>{1.0f, -2.0f, 3.5f, 0.25f, 7.0f}));
  EXPECT_EQ(f.log->toDevice, 0);
}

TEST(DeviceStaging, CopyErrorsNameTheTensor) {
  for (bool atPost : {true, false}) {
    Fixture f;
    (atPost ? f.log->failPost : f.log->failCopy) = true;
    auto task = f.task(noTransport());
    int polls = 0;
    Status st = drive(*task, &polls);
    EXPECT_EQ(st.code(), Code::kInternal);
    EXPECT_NE(st.message().find("device tensor w"), std::string::npos) << st.toString();
    EXPECT_TRUE(f.probe.sawAtStart.empty()) << "no host step after a failed copy-in";
  }
}

TEST(DeviceStaging, NotQuiescentWhileACopyIsInFlightAndAbortReachesTheStep) {
  Fixture f;
  f.log->pollsPerCopy = 3;
  auto task = f.task(noTransport());
  ASSERT_EQ(task->start().code(), Code::kInProgress);
  task->abort(Status(Code::kAborted, "peer died"));
  EXPECT_FALSE(f.probe.aborted) << "the step had not started";
  EXPECT_FALSE(task->quiescent());  // the copy-in still targets the pinned buffer
  int polls = 0;
  while (!task->quiescent() && polls < 10) ++polls;
  EXPECT_TRUE(task->quiescent());
  EXPECT_EQ(task->waitingOn(), -1);

  Fixture g;
  auto running = g.task(noTransport());
  Status st = running->start();
  while (st.code() == Code::kInProgress && g.probe.sawAtStart.empty()) st = running->progress();
  EXPECT_EQ(running->waitingOn(), 3);  // the host step's peer
  running->abort(Status(Code::kAborted, "peer died"));
  EXPECT_TRUE(g.probe.aborted);
}

TEST(DeviceStaging, PinnedBufferIsFreedAndBadPointersAreNamed) {
  auto log = std::make_shared<FakeCopierLog>();
  std::vector<float> device(4);
  log->rejected = device.data();
  {
    auto made = DeviceStaging::create(std::make_unique<FakeCopier>(log), "layer1.bias", device.size());
    ASSERT_TRUE(made.isOk());
    EXPECT_EQ(log->pinnedLive, 1);
    Status st = made.value()->checkDevice(device.data());
    EXPECT_EQ(st.code(), Code::kInvalidArgument);
    EXPECT_NE(st.message().find("layer1.bias"), std::string::npos) << st.toString();
    EXPECT_NE(st.message().find("not CUDA device memory"), std::string::npos) << st.toString();
  }
  EXPECT_EQ(log->pinnedLive, 0);
}

// Without CUDA in the build, or without a device (this machine), memory=cuda fails with a
// message that names the tensor and the reason; it never crashes.
TEST(DeviceStaging, OpenFailsClearlyWithoutCudaOrADevice) {
  auto made = openDeviceStaging("fc1.weight", 10);
  if (made.isOk()) GTEST_SKIP() << "a CUDA device is present: " << made.value()->copier().describe();
  EXPECT_EQ(made.status().code(), Code::kNotSupported);
  const std::string& m = made.status().message();
  EXPECT_NE(m.find("tensor fc1.weight"), std::string::npos) << m;
#ifdef TSR_HAVE_CUDA_COPIER
  EXPECT_NE(m.find("no usable CUDA device"), std::string::npos) << m;
#else
  EXPECT_NE(m.find("built without CUDA"), std::string::npos) << m;
#endif
}

// Direct only when UCX moves CUDA memory and the algorithm has a device step; the note says
// which path and why in each case.
TEST(DevicePath, ChoiceAndNote) {
  EXPECT_EQ(chooseDevicePath(true, ""), DevicePath::kDirect);
  EXPECT_EQ(chooseDevicePath(false, ""), DevicePath::kStaged);
  EXPECT_EQ(chooseDevicePath(true, "algorithm=spardl has no device step"), DevicePath::kStaged);
  EXPECT_NE(devicePathNote(DevicePath::kStaged, false, "").find("UCX reports no CUDA memory support"),
            std::string::npos);
  std::string why = devicePathNote(DevicePath::kStaged, true, "algorithm=spardl has no device step");
  EXPECT_NE(why.find("staged through pinned host memory"), std::string::npos) << why;
  EXPECT_NE(why.find("algorithm=spardl has no device step"), std::string::npos) << why;
  std::string direct = devicePathNote(DevicePath::kDirect, true, "");
  EXPECT_NE(direct.find("direct device path"), std::string::npos) << direct;
  EXPECT_NE(direct.find("no host staging"), std::string::npos) << direct;
}

// The real openers fail here (no device, or no CUDA in the build) naming the tensor.
TEST(DevicePath, CudaOpenersFailClearlyWithoutADevice) {
  DeviceOpeners open = cudaDeviceOpeners("fc2.bias", 10);
  auto kernels = open.kernels();
  if (kernels.isOk()) GTEST_SKIP() << "a CUDA device is present: " << kernels.value()->describe();
  EXPECT_EQ(kernels.status().code(), Code::kNotSupported);
  EXPECT_NE(kernels.status().message().find("tensor fc2.bias: memory=cuda is not possible here"), std::string::npos)
      << kernels.status().toString();
}

}  // namespace
}  // namespace tsr::algorithms
