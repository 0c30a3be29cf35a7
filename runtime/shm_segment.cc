#include "runtime/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

namespace tsr::runtime {

namespace {

Status failure(const std::string& what, const std::string& name) {
  return Status(Code::kTransport, what + " shared-memory segment " + name + ": " + std::strerror(errno));
}

Result<void*> mapShared(int fd, size_t bytes, const std::string& name) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return failure("cannot map", name);
  return p;
}

}  // namespace

Result<std::unique_ptr<ShmSegment>> ShmSegment::create(size_t bytes) {
  std::random_device rd;
  std::string name = "/tsr-" + std::to_string(getpid()) + "-" + std::to_string(rd()) + std::to_string(rd());
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return failure("cannot create", name);
  // Reserve the pages now: a sparse segment on a full /dev/shm (a container's 64 MiB, say)
  // would kill a rank with SIGBUS at its first write instead of failing here, named.
  if (int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); err != 0) {
    errno = err;
    Status st = failure("cannot reserve " + std::to_string(bytes) + " bytes for", name);
    close(fd);
    shm_unlink(name.c_str());
    return st;
  }
  auto mapped = mapShared(fd, bytes, name);
  close(fd);
  if (!mapped.isOk()) {
    shm_unlink(name.c_str());
    return mapped.status();
  }
  return std::unique_ptr<ShmSegment>(new ShmSegment(name, mapped.value(), bytes, true));
}

Result<std::unique_ptr<ShmSegment>> ShmSegment::open(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) return failure("cannot open", name);
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < bytes) {
    close(fd);
    return Status(Code::kTransport, "shared-memory segment " + name + " has " + std::to_string(st.st_size) +
                                        " bytes where " + std::to_string(bytes) + " were expected");
  }
  auto mapped = mapShared(fd, bytes, name);
  close(fd);
  if (!mapped.isOk()) return mapped.status();
  return std::unique_ptr<ShmSegment>(new ShmSegment(name, mapped.value(), bytes, false));
}

void ShmSegment::unlink() {
  if (linked_) shm_unlink(name_.c_str());
  linked_ = false;
}

ShmSegment::~ShmSegment() {
  unlink();
  munmap(data_, bytes_);
}

}  // namespace tsr::runtime
