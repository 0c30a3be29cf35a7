// Byte buffers kept for reuse, up to a total capacity. The consumer path keeps a message that
// came before its receive in one of these: a fresh allocation of a ring chunk (hundreds of
// KiB) is an mmap whose pages fault in, zeroed, on every copy, and an munmap when it is freed.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace tsr::transport {

class SpareBuffers {
 public:
  explicit SpareBuffers(size_t maxKeptBytes) : maxKept_(maxKeptBytes) {}

  // A buffer holding a copy of [data, data + length): a kept one whose capacity suffices
  // when there is one (the smallest such), else a new one.
  std::vector<char> copyOf(const char* data, size_t length) {
    size_t best = spares_.size();
    for (size_t i = 0; i < spares_.size(); ++i)
      if (spares_[i].capacity() >= length &&
          (best == spares_.size() || spares_[i].capacity() < spares_[best].capacity()))
        best = i;
    std::vector<char> buffer;
    if (best != spares_.size()) {
      kept_ -= spares_[best].capacity();
      buffer = std::move(spares_[best]);
      spares_[best] = std::move(spares_.back());
      spares_.pop_back();
    }
    buffer.assign(data, data + length);
    return buffer;
  }

  // Keeps `buffer` for a later copyOf while the total stays within the limit; else frees it.
  void giveBack(std::vector<char>&& buffer) {
    if (buffer.capacity() == 0 || kept_ + buffer.capacity() > maxKept_) return;
    kept_ += buffer.capacity();
    spares_.push_back(std::move(buffer));
  }

  size_t keptBytes() const { return kept_; }
  size_t keptBuffers() const { return spares_.size(); }

 private:
  size_t maxKept_;
  size_t kept_ = 0;
  std::vector<std::vector<char>> spares_;
};

}  // namespace tsr::transport
