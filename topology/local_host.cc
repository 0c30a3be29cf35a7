#include "topology/local_host.h"

#include <unistd.h>

#include <algorithm>

namespace tsr::topology {
namespace {

bool isLoopbackV4(std::string_view name) {
  // 127.a.b.c with four decimal parts, each 0..255.
  if (name.substr(0, 4) != "127.") return false;
  int parts = 0;
  size_t pos = 0;
  while (pos <= name.size()) {
    size_t end = name.find('.', pos);
    if (end == std::string_view::npos) end = name.size();
    std::string_view part = name.substr(pos, end - pos);
    if (part.empty() || part.size() > 3) return false;
    if (!std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
    if (std::stoi(std::string(part)) > 255) return false;
    ++parts;
    pos = end + 1;
  }
  return parts == 4;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

bool isLocalHost(std::string_view name, const std::vector<std::string>& localNames) {
  std::string n = lower(name);
  if (n == "localhost" || n == "localhost.localdomain" || n == "::1" || isLoopbackV4(n)) return true;
  return std::any_of(localNames.begin(), localNames.end(),
                     [&](const std::string& local) { return !local.empty() && lower(local) == n; });
}

std::vector<std::string> machineNames(const std::vector<HostEntry>& hosts, const std::vector<std::string>& localNames) {
  std::vector<std::string> machines;
  std::string thisMachine;  // the first local entry's name
  for (const HostEntry& host : hosts) {
    if (!isLocalHost(host.name, localNames)) {
      machines.push_back(host.name);
      continue;
    }
    if (thisMachine.empty()) thisMachine = host.name;
    machines.push_back(thisMachine);
  }
  return machines;
}

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

}  // namespace tsr::topology
