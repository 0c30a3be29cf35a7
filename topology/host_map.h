// HostMap: which ranks share a host, and the ring order that keeps traffic local.
//
// Input is one RankPlacement per rank, as the bootstrap exchange delivers it. Two ranks share a
// host when their host ids are equal (the hostname when the id is empty). Hosts are listed in
// the order of their lowest rank; a host's ranks are listed ascending and numbered 0.. as
// local ranks.
//
// Ring order: hosts one after the other, so the ring crosses hosts exactly H times for H > 1
// hosts (the minimum); inside a host, ranks sorted by locality (NUMA node, then PCI path of
// their GPU/NIC, so ranks under one switch are adjacent), so each NUMA boundary is crossed once.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "topology/machine_topology.h"

namespace tsr::topology {

struct RankPlacement {
  int rank = 0;
  std::string hostname;
  std::string hostId;    // e.g. /etc/machine-id or boot id; empty = use hostname
  int numaNode = -1;     // NUMA node the rank is bound near, -1 unknown
  std::string locality;  // localityKey() of its GPU (else NIC); empty unknown
  std::string gpuBusId;  // may be empty
  std::string nicBusId;  // may be empty
};

struct HostInfo {
  std::string name;
  std::string id;
  std::vector<int> ranks;  // ascending; ranks[i] has local rank i
};

struct HostMap {
  int worldSize = 0;
  std::vector<HostInfo> hosts;
  std::vector<int> hostOfRank;  // index into hosts
  std::vector<int> localRank;
  std::vector<int> localSize;
  std::vector<RankPlacement> placements;  // by rank

  bool sameHost(int a, int b) const { return hostOfRank[a] == hostOfRank[b]; }
};

// Placements must name ranks 0..N-1 exactly once (any order); the error names the bad rank.
Result<HostMap> buildHostMap(const std::vector<RankPlacement>& placements);

// Placement of local rank `localRank` of `localSize` on a machine shaped like `topo`.
RankPlacement placementOn(const MachineTopology& topo, int rank, int localRank, int localSize,
                          const std::string& hostname, const std::string& hostId = "");

// Ranks in ring order (see the header comment).
std::vector<int> ringOrder(const HostMap& hosts);
// The ranks of one host in locality order.
std::vector<int> localOrder(const HostMap& hosts, int hostIndex);

// Ring edges (order[p] -> order[p+1 mod n]) whose ends are on different hosts.
int hostCrossings(const HostMap& hosts, const std::vector<int>& order);
// Ring edges whose ends share a host but sit on different, known NUMA nodes.
int numaCrossings(const HostMap& hosts, const std::vector<int>& order);

}  // namespace tsr::topology
