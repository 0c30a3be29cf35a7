#include "tools/tsrun/rank_plan.h"

#include <algorithm>
#include <map>
#include <set>

namespace tsr::tools::tsrun {
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
  // Machine -> ranks placed there so far; all local names are one machine (topology/local_host.h,
  // the rule tsr-topo draws jobs by).
  const std::vector<std::string> machineOf = topology::machineNames(hosts, options.localNames);
  std::map<std::string, int> perMachine;
  std::vector<std::string> machineOfRank;
  for (size_t h = 0; h < hosts.size(); ++h) {
    const HostEntry& host = hosts[h];
    bool local = isLocalHost(host.name, options.localNames);
    for (int s = 0; s < host.slots && static_cast<int>(plan.size()) < options.np; ++s) {
      RankSlot slot;
      slot.rank = static_cast<int>(plan.size());
      slot.host = host.name;
      slot.local = local;
      slot.localRank = perMachine[machineOf[h]]++;
      plan.push_back(std::move(slot));
      machineOfRank.push_back(machineOf[h]);
    }
  }

  bool anyRemote = std::any_of(plan.begin(), plan.end(), [](const RankSlot& r) { return !r.local; });
  std::string localAddress = anyRemote && !options.localAddress.empty() ? options.localAddress : "127.0.0.1";
  for (RankSlot& slot : plan) {
    slot.localSize = perMachine[machineOfRank[slot.rank]];
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
