// A Transport that moves nothing, for unit tests of code that needs one to refer to (plan
// executors driven by hand, tasks that never send). Sends and receives are refused unless a
// test overrides them; everything else is a no-op. Header-only; not linked into the library.
#pragma once

#include <string>
#include <vector>

#include "transport/transport.h"

namespace tsr::transport::testing {

class StubTransport : public Transport {
 public:
  explicit StubTransport(int rank = 0, int size = 1) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& localAddress() const override { return address_; }
  Status connect(const std::vector<std::string>&) override { return Status::ok(); }
  Status send(int, uint64_t, const void*, size_t, MemoryType, Completion*) override {
    return Status(Code::kInternal, "stub transport: no sends");
  }
  Status recv(int, uint64_t, uint64_t, void*, size_t, MemoryType, Completion*) override {
    return Status(Code::kInternal, "stub transport: no receives");
  }
  void cancel(Completion*) override {}
  bool progress() override { return false; }
  bool armEvents() override { return false; }
  void sleepUntilEvent(int) override {}
  void wake() override {}
  Status peerStatus(int) const override { return Status::ok(); }
  void markPeerLeft(int) override {}
  void abandonPendingOnClose() override {}
  void beginLeaving() override {}
  bool supportsMemoryType(MemoryType t) const override { return t == MemoryType::kHost; }
  uint64_t bytesSent() const override { return 0; }

 private:
  int rank_, size_;
  std::string address_;
};

}  // namespace tsr::transport::testing
