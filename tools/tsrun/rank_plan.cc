#include "tools/tsrun/rank_plan.h"

#include <algorithm>
#include <map>
#include <set>

namespace tsr::tools::tsrun {
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
    if (!std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return false;
    }
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
  if (n == "localhost" || n == "localhost.localdomain" || n == "::1" || isLoopbackV4(n)) {
    return true;
  }
  return std::any_of(localNames.begin(), localNames.end(),
                     [&](const std::string& local) { return !local.empty() && lower(local) == n; });
}

Result<std::vector<RankSlot>> buildRankPlan(const std::vector<HostEntry>& hosts, const PlanOptions& options) {
  const std::string source = options.source.empty() ? "host list" : options.source;
  if (options.np < 1) {
    return Status(Code::kInvalidArgument, "-np " + std::to_string(options.np) + ": the number of ranks must be >= 1");
  }
  if (hosts.empty()) {
    return Status(Code::kInvalidArgument, source + ": no hosts to run on");
  }
  int slots = totalSlots(hosts);
  if (options.np > slots) {
    return Status(Code::kInvalidArgument,
                  "-np " + std::to_string(options.np) + " is larger than the " + std::to_string(slots) + " slots in " +
                      source + " (" + std::to_string(hosts.size()) + (hosts.size() == 1 ? " host)" : " hosts)"));
  }
  if (options.basePort < 1 || options.basePort > 65535) {
    return Status(Code::kInvalidArgument, "TSR_BASE_PORT " + std::to_string(options.basePort) + " is not in 1..65535");
  }

  std::vector<RankSlot> plan;
  plan.reserve(options.np);
  // Machine key -> ranks placed there so far. All local names are one machine ("").
  std::map<std::string, int> perMachine;
  for (const HostEntry& host : hosts) {
    bool local = isLocalHost(host.name, options.localNames);
    std::string key = local ? std::string() : host.name;
    for (int s = 0; s < host.slots && static_cast<int>(plan.size()) < options.np; ++s) {
      RankSlot slot;
      slot.rank = static_cast<int>(plan.size());
      slot.host = host.name;
      slot.local = local;
      slot.localRank = perMachine[key]++;
      plan.push_back(std::move(slot));
    }
  }

  bool anyRemote = std::any_of(plan.begin(), plan.end(), [](const RankSlot& r) { return !r.local; });
  std::string localAddress = anyRemote && !options.localAddress.empty() ? options.localAddress : "127.0.0.1";
  for (RankSlot& slot : plan) {
    slot.localSize = perMachine[slot.local ? std::string() : slot.host];
    if (slot.local) {
      slot.peerHost = localAddress;
    } else {
      slot.peerHost = slot.host;
      slot.port = options.basePort + slot.localRank;
      if (slot.port > 65535) {
        return Status(Code::kInvalidArgument, "rank " + std::to_string(slot.rank) + " on " + slot.host + ": port " +
                                                  std::to_string(slot.port) + " = TSR_BASE_PORT " +
                                                  std::to_string(options.basePort) + " + local rank " +
                                                  std::to_string(slot.localRank) + " is above 65535");
      }
    }
  }
  return plan;
}

int countLocalRanks(const std::vector<RankSlot>& plan) {
  return static_cast<int>(std::count_if(plan.begin(), plan.end(), [](const RankSlot& r) { return r.local; }));
}

Status assignLocalPorts(std::vector<RankSlot>& plan, const std::vector<int>& ports) {
  int needed = countLocalRanks(plan);
  if (static_cast<int>(ports.size()) != needed) {
    return Status(Code::kInternal, "assignLocalPorts: " + std::to_string(ports.size()) + " ports for " +
                                       std::to_string(needed) + " local ranks");
  }
  std::set<int> seen;
  for (int port : ports) {
    if (port < 1 || port > 65535 || !seen.insert(port).second) {
      return Status(Code::kInternal,
                    "assignLocalPorts: port " + std::to_string(port) + " is out of range or given twice");
    }
  }
  size_t next = 0;
  for (RankSlot& slot : plan) {
    if (slot.local) slot.port = ports[next++];
  }
  return Status::ok();
}

std::string peersString(const std::vector<RankSlot>& plan) {
  std::string out;
  for (const RankSlot& slot : plan) {
    if (!out.empty()) out += ',';
    out += slot.peerHost + ":" + std::to_string(slot.port);
  }
  return out;
}

}  // namespace tsr::tools::tsrun
