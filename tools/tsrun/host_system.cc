#include "tools/tsrun/host_system.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/bounded_file.h"
#include "base/port_reservation.h"

namespace tsr::tools::tsrun {

// Reserved for the life of tsrun (see base/port_reservation.h): the ranks can listen there,
// but no other process can be handed the same port meanwhile.
Result<std::vector<int>> pickFreePorts(int n) {
  static std::vector<PortReservation> held;
  TSR_ASSIGN_OR_RETURN(PortReservation r, PortReservation::reserve(n, false));
  std::vector<int> ports(r.ports().begin(), r.ports().end());
  held.push_back(std::move(r));
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
  return readBoundedFile(path, kMaxHostfileBytes, "hostfile");
}

}  // namespace tsr::tools::tsrun
