// A Transport whose peers are the fuzz input: each receive, in the order it is posted,
// completes with the next message of the input (u16 little-endian length, then that many
// bytes), as UCX would deliver it: a longer message than the receive buffer fails the receive
// as truncated (kMismatch), and once the input runs out every receive fails as if the peer
// died. Sends complete at once and go nowhere.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace tsr::fuzz {

class FuzzTransport final : public transport::Transport {
 public:
  FuzzTransport(int rank, int size, const uint8_t* data, size_t bytes)
      : rank_(rank), size_(size), data_(data), left_(bytes) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& localAddress() const override { return address_; }
  Status connect(const std::vector<std::string>&) override { return Status::ok(); }
  Status send(int peer, uint64_t tag, const void*, size_t bytes, transport::MemoryType,
              transport::Completion* c) override {
    if (peer < 0 || peer >= size_ || peer == rank_) __builtin_trap();  // the schedule is wrong
    *c = transport::Completion{};
    c->posted = c->done = true;
    c->tag = tag;
    sent_ += bytes;
    return Status::ok();
  }
  Status recv(int peer, uint64_t tag, uint64_t, void* buffer, size_t bytes, transport::MemoryType,
              transport::Completion* c) override {
    if (peer < 0 || peer >= size_ || peer == rank_) __builtin_trap();
    *c = transport::Completion{};
    c->posted = true;
    c->handle = c;
    pending_.push_back({buffer, bytes, tag, c});
    return Status::ok();
  }
  void cancel(transport::Completion* c) override {
    for (auto it = pending_.begin(); it != pending_.end(); ++it)
      if (it->c == c) {
        pending_.erase(it);
        c->done = true, c->handle = nullptr;
        c->status = Status(Code::kAborted, "fuzz transport: cancelled");
        return;
      }
  }
  // Delivers the oldest pending receive; false when none is pending.
  bool progress() override {
    if (pending_.empty()) return false;
    Pending p = pending_.front();
    pending_.pop_front();
    transport::Completion* c = p.c;
    c->done = true, c->handle = nullptr, c->tag = p.tag;
    if (left_ < 2) {
      c->status = Status(Code::kPeerFailed, "fuzz transport: the input ran out");
      return true;
    }
    size_t length = data_[0] | size_t{data_[1]} << 8;
    data_ += 2, left_ -= 2;
    if (length > left_) length = left_;
    if (length > p.bytes) {
      c->status = Status(Code::kMismatch, "fuzz transport: message larger than the receive buffer");
    } else {
      if (length) std::memcpy(p.buffer, data_, length);
      c->bytes = length;
    }
    data_ += length, left_ -= length;
    return true;
  }
  bool armEvents() override { return false; }
  void sleepUntilEvent(int) override {}
  void wake() override {}
  Status peerStatus(int) const override { return Status::ok(); }
  void markPeerLeft(int) override {}
  void abandonPendingOnClose() override {}
  void beginLeaving() override {}
  bool supportsMemoryType(transport::MemoryType t) const override { return t == transport::MemoryType::kHost; }
  uint64_t bytesSent() const override { return sent_; }
  bool idle() const { return pending_.empty(); }

 private:
  struct Pending {
    void* buffer;
    size_t bytes;
    uint64_t tag;
    transport::Completion* c;
  };
  int rank_, size_;
  std::string address_;
  const uint8_t* data_;
  size_t left_;
  std::deque<Pending> pending_;
  uint64_t sent_ = 0;
};

}  // namespace tsr::fuzz
