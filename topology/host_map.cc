#include "topology/host_map.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "topology/binding.h"

namespace tsr::topology {

Result<HostMap> buildHostMap(const std::vector<RankPlacement>& placements) {
  HostMap map;
  int n = static_cast<int>(placements.size());
  map.worldSize = n;
  map.placements.resize(n);
  std::vector<bool> seen(n, false);
  for (const RankPlacement& p : placements) {
    if (p.rank < 0 || p.rank >= n)
      return Status(Code::kInvalidArgument,
                    "host map: rank " + std::to_string(p.rank) + " is outside 0.." + std::to_string(n - 1));
    if (seen[p.rank])
      return Status(Code::kInvalidArgument, "host map: rank " + std::to_string(p.rank) + " is listed twice");
    if (p.hostname.empty() && p.hostId.empty())
      return Status(Code::kInvalidArgument, "host map: rank " + std::to_string(p.rank) + " has no hostname or host id");
    seen[p.rank] = true;
    map.placements[p.rank] = p;
  }
  std::map<std::string, int> hostIndex;
  map.hostOfRank.resize(n);
  map.localRank.resize(n);
  map.localSize.resize(n);
  for (int r = 0; r < n; ++r) {
    const RankPlacement& p = map.placements[r];
    const std::string key = p.hostId.empty() ? "name:" + p.hostname : "id:" + p.hostId;
    auto [it, inserted] = hostIndex.emplace(key, static_cast<int>(map.hosts.size()));
    if (inserted) map.hosts.push_back(HostInfo{p.hostname, p.hostId, {}});
    HostInfo& host = map.hosts[it->second];
    map.hostOfRank[r] = it->second;
    map.localRank[r] = static_cast<int>(host.ranks.size());
    host.ranks.push_back(r);
  }
  for (int r = 0; r < n; ++r) map.localSize[r] = static_cast<int>(map.hosts[map.hostOfRank[r]].ranks.size());
  return map;
}

RankPlacement placementOn(const MachineTopology& topo, int rank, int localRank, int localSize,
                          const std::string& hostname, const std::string& hostId) {
  RankPlacement p;
  p.rank = rank;
  p.hostname = hostname;
  p.hostId = hostId;
  DeviceAssignment devices = assignDevices(topo, localRank, localSize);
  p.numaNode = devices.numaNode;
  if (devices.gpu >= 0) {
    p.gpuBusId = topo.gpus[devices.gpu].busId;
    p.locality = localityKey(topo.gpus[devices.gpu]);
  }
  if (devices.nic >= 0) {
    p.nicBusId = topo.nics[devices.nic].busId;
    if (p.locality.empty()) p.locality = localityKey(topo.nics[devices.nic]);
  }
  return p;
}

std::vector<int> localOrder(const HostMap& hosts, int hostIndex) {
  std::vector<int> ranks = hosts.hosts[hostIndex].ranks;
  auto key = [&](int r) {
    const RankPlacement& p = hosts.placements[r];
    // Unknown NUMA sorts last; the locality key groups ranks under one PCI subtree.
    return std::make_tuple(p.numaNode < 0 ? 1 << 30 : p.numaNode, p.locality, r);
  };
  std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) { return key(a) < key(b); });
  return ranks;
}

std::vector<int> ringOrder(const HostMap& hosts) {
  std::vector<int> order;
  order.reserve(hosts.worldSize);
  for (int h = 0; h < static_cast<int>(hosts.hosts.size()); ++h) {
    std::vector<int> local = localOrder(hosts, h);
    order.insert(order.end(), local.begin(), local.end());
  }
  return order;
}

int hostCrossings(const HostMap& hosts, const std::vector<int>& order) {
  int n = static_cast<int>(order.size());
  if (n < 2) return 0;
  int crossings = 0;
  for (int p = 0; p < n; ++p)
    if (!hosts.sameHost(order[p], order[(p + 1) % n])) ++crossings;
  return crossings;
}

int numaCrossings(const HostMap& hosts, const std::vector<int>& order) {
  int n = static_cast<int>(order.size());
  if (n < 2) return 0;
  int crossings = 0;
  for (int p = 0; p < n; ++p) {
    int a = order[p], b = order[(p + 1) % n];
    int na = hosts.placements[a].numaNode, nb = hosts.placements[b].numaNode;
    if (hosts.sameHost(a, b) && na >= 0 && nb >= 0 && na != nb) ++crossings;
  }
  return crossings;
}

}  // namespace tsr::topology
