#include "base/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tsr {

namespace {

// Closes the descriptor it holds.
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

Result<std::string> readBoundedFile(const std::string& path, size_t maxBytes, const std::string& what) {
  auto failed = [&](const std::string& why) { return Status(Code::kInvalidArgument, what + " '" + path + "' " + why); };
  FileDescriptor file{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) return failed(std::string("cannot be read: ") + std::strerror(errno));
  struct stat info {};
  if (fstat(file.fd, &info) != 0) return failed(std::string("cannot be read: ") + std::strerror(errno));
  if (S_ISDIR(info.st_mode)) return failed("is a directory");
  std::string limit = "the limit is " + std::to_string(maxBytes) + " bytes";
  if (S_ISREG(info.st_mode) && static_cast<unsigned long long>(info.st_size) > maxBytes)
    return failed("is too large (" + std::to_string(info.st_size) + " bytes; " + limit + ")");
  // Devices and pipes have no size: read one byte past the limit to find out.
  std::string text;
  char buffer[65536];
  while (true) {
    ssize_t n = read(file.fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failed(std::string("cannot be read: ") + std::strerror(errno));
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > maxBytes) return failed("is too large (" + limit + ")");
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace tsr
