// Shared by the direct device path tests (device_direct_test.cc, compressed_direct_test.cc):
// openers that hand out the fakes of device_fakes.h and count what was opened, and the
// per-rank RecordingTransport wrappers of a thread world.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algorithms/team/device_path.h"
#include "algorithms/team/tests/fake_copier.h"
#include "runtime/communicator.h"
#include "tests/support/device_fakes.h"

namespace tsr::testing {

struct Opened {
  std::shared_ptr<FakeDeviceKernels> kernels = std::make_shared<FakeDeviceKernels>();
  std::shared_ptr<FakeCopierLog> copies = std::make_shared<FakeCopierLog>();
  int kernelOpens = 0, stagingOpens = 0;
  algorithms::DeviceOpeners openers(const std::string& name, size_t count) {
    algorithms::DeviceOpeners o;
    o.kernels = [this]() -> Result<std::shared_ptr<algorithms::StepKernels>> {
      ++kernelOpens;
      return std::shared_ptr<algorithms::StepKernels>(kernels);
    };
    o.staging = [this, name, count]() {
      ++stagingOpens;
      return algorithms::DeviceStaging::create(std::make_unique<FakeCopier>(copies), name, count);
    };
    return o;
  }
};

struct World {
  std::vector<RecordingTransport*> transports;
  explicit World(int n) : transports(n) {}
  runtime::Communicator::TransportWrapper wrapper(bool claimCuda) {
    return [this, claimCuda](transport::Transport& ucx) {
      auto t = std::make_unique<RecordingTransport>(ucx, claimCuda);
      transports[ucx.rank()] = t.get();
      return std::unique_ptr<transport::Transport>(std::move(t));
    };
  }
};

}  // namespace tsr::testing
