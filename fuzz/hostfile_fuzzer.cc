// The hostfile and -H list (topology/hostfile.h): text the user wrote. Every accepted host must be
// safe as a word of the rsh agent's command line (a name, or IPv6's loopback), with a slot
// count in range.
#include <cctype>
#include <cstdint>
#include <string_view>

#include "topology/hostfile.h"

using namespace tsr::topology;

namespace {

void check(const std::vector<HostEntry>& hosts) {
  if (hosts.empty()) __builtin_trap();
  for (const HostEntry& h : hosts) {
    if (h.name.empty() || h.name[0] == '-' || h.slots < 1 || h.slots > (1 << 20)) __builtin_trap();
    if (h.name == "::1" || h.name == "0:0:0:0:0:0:0:1") continue;  // IPv6's loopback, the one address form taken
    for (char c : h.name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') __builtin_trap();
  }
  if (totalSlots(hosts) < 1) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto hosts = data[0] & 1 ? parseHostList(text) : parseHostfile(text, "fuzz.hosts");
  if (hosts.isOk()) check(hosts.value());
  return 0;
}
