// ShmSegment: a POSIX shared-memory segment mapped by every rank of a one-machine
// communicator (the small-allreduce board, algorithms/dense/shm_board.h). Rank 0 creates it
// under a random name, the others open it by that name, and once all have it mapped rank 0
// unlinks the name, so nothing is left in /dev/shm when the job ends, however it ends after
// that point.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "base/status.h"

namespace tsr::runtime {

class ShmSegment {
 public:
  // A new zero-filled segment under a fresh name ("/tsr-<pid>-<random>").
  static Result<std::unique_ptr<ShmSegment>> create(size_t bytes);
  // The segment another rank created; fails naming it if it is missing or smaller.
  static Result<std::unique_ptr<ShmSegment>> open(const std::string& name, size_t bytes);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  const std::string& name() const { return name_; }
  void* data() const { return data_; }
  size_t size() const { return bytes_; }
  // Removes the name (the mapping stays); the creator calls it once every rank has opened it.
  void unlink();

 private:
  ShmSegment(std::string name, void* data, size_t bytes, bool owner)
      : name_(std::move(name)), data_(data), bytes_(bytes), linked_(owner) {}
  std::string name_;
  void* data_;
  size_t bytes_;
  bool linked_;  // the creator's name still exists
};

}  // namespace tsr::runtime
