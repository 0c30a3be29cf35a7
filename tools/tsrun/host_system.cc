#include "tools/tsrun/host_system.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tsr::tools::tsrun {

std::vector<std::string> localHostNames() {
  std::vector<std::string> names;
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) == 0 && buf[0] != '\0') {
    std::string name(buf);
    names.push_back(name);
    size_t dot = name.find('.');
    if (dot != std::string::npos && dot > 0) names.push_back(name.substr(0, dot));
  }
  return names;
}

// The probe sockets stay bound (not listening, close-on-exec, SO_REUSEADDR set after bind) for the life of
// tsrun: the ranks can still bind and listen there (they set SO_REUSEADDR too), but no other
// process's bind(0) picks the same port between our choice and the rank's listen.
Result<std::vector<int>> pickFreePorts(int n) {
  static std::vector<int> reserved;
  std::vector<int> fds;
  std::vector<int> ports;
  Status status;
  for (int i = 0; i < n && status.isOk(); ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      status = Status(Code::kInternal, std::string("socket(): ") + std::strerror(errno));
      break;
    }
    fds.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      status = Status(Code::kInternal,
                      std::string("picking a free TCP port: ") + std::strerror(errno));
      break;
    }
    // Flagged only after bind: the port itself is unique, yet a rank may listen on it.
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ports.push_back(ntohs(addr.sin_port));
  }
  if (!status.isOk()) {
    for (int fd : fds) close(fd);
    return status;
  }
  reserved.insert(reserved.end(), fds.begin(), fds.end());
  return ports;
}

Result<std::string> randomHex(int bytes) {
  std::vector<unsigned char> raw(static_cast<size_t>(bytes));
  if (RAND_bytes(raw.data(), bytes) != 1) {
    return Status(Code::kInternal, "RAND_bytes failed: no random bytes for the job secret");
  }
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(raw.size() * 2);
  for (unsigned char b : raw) {
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  return hex;
}

Result<std::string> readTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(Code::kInvalidArgument,
                  path + ": cannot open hostfile (" + std::strerror(errno) + ")");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return Status(Code::kInvalidArgument, path + ": read error");
  }
  return text.str();
}

}  // namespace tsr::tools::tsrun
