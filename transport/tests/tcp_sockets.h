// Test helpers for UCX's TCP sockets: an environment variable set for one scope, and the send
// buffer (SO_SNDBUF) of every TCP socket this process holds.
#pragma once

#include <dirent.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace tsr::transport::testing {

// Sets an environment variable for one scope and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// SO_SNDBUF of every IPv4/IPv6 stream socket open in this process.
inline std::vector<int> tcpSendBuffers() {
  std::vector<int> sizes;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return sizes;
  while (dirent* e = readdir(dir)) {
    int fd = std::atoi(e->d_name);
    if (fd <= 2 || fd == dirfd(dir)) continue;
    int type = 0, domain = 0, size = 0;
    socklen_t len = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) continue;
    len = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) continue;
    if (domain != AF_INET && domain != AF_INET6) continue;
    len = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, &len) == 0) sizes.push_back(size);
  }
  closedir(dir);
  return sizes;
}

}  // namespace tsr::transport::testing
