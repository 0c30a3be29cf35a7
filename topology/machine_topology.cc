#include "topology/machine_topology.h"

#include <algorithm>
#include <cstdio>

namespace tsr::topology {

const char* linkTypeName(LinkType type) {
  switch (type) {
    case LinkType::kSelf:
      return "X";
    case LinkType::kPix:
      return "PIX";
    case LinkType::kPxb:
      return "PXB";
    case LinkType::kPhb:
      return "PHB";
    case LinkType::kNode:
      return "NODE";
    case LinkType::kSys:
      return "SYS";
  }
  return "?";
}

std::string linkTypeLegend() {
  return "  X    = Self\n"
         "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes\n"
         "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host "
         "Bridges within a NUMA node\n"
         "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
         "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host "
         "Bridge)\n"
         "  PIX  = Connection traversing at most a single PCIe bridge (one switch)\n";
}

std::uint64_t MachineTopology::totalMemoryBytes() const {
  std::uint64_t total = 0;
  for (const NumaNode& node : numaNodes) total += node.memoryBytes;
  return total;
}

std::vector<int> MachineTopology::numaPus(int numaIndex) const {
  std::vector<int> pus;
  if (numaIndex < 0 || numaIndex >= static_cast<int>(numaNodes.size())) return pus;
  for (const auto& core : numaNodes[numaIndex].cores) pus.insert(pus.end(), core.begin(), core.end());
  std::sort(pus.begin(), pus.end());
  return pus;
}

namespace {

LinkType acrossHostBridges(const Device& a, const Device& b) {
  if (a.numaNode >= 0 && a.numaNode == b.numaNode) return LinkType::kNode;
  if (a.numaNode < 0 && b.numaNode < 0 && a.package >= 0 && a.package == b.package) return LinkType::kNode;
  return LinkType::kSys;
}

}  // namespace

LinkType linkBetween(const Device& a, const Device& b) {
  if (&a == &b) return LinkType::kSelf;
  if (!a.busId.empty() ? a.busId == b.busId : (a.name == b.name && a.kind == b.kind)) return LinkType::kSelf;
  if (a.pciPath.empty() || b.pciPath.empty() || a.pciPath[0] != b.pciPath[0]) return acrossHostBridges(a, b);
  std::size_t common = 0;
  while (common < a.pciPath.size() && common < b.pciPath.size() && a.pciPath[common] == b.pciPath[common]) ++common;
  if (common == 1) return LinkType::kPhb;  // only the host bridge is shared
  // The lowest common bridge is a switch's upstream port; one downstream port on each side
  // is still "the same switch".
  std::size_t belowA = a.pciPath.size() - common;
  std::size_t belowB = b.pciPath.size() - common;
  return (belowA <= 1 && belowB <= 1) ? LinkType::kPix : LinkType::kPxb;
}

std::string localityKey(const Device& device) {
  char numa[16];
  std::snprintf(numa, sizeof(numa), "n%04d", device.numaNode < 0 ? 9999 : device.numaNode);
  std::string key = numa;
  for (const std::string& bridge : device.pciPath) key += "/" + bridge;
  key += "/" + (device.busId.empty() ? device.name : device.busId);
  return key;
}

int nearestNic(const MachineTopology& topo, int gpuIndex, int tieBreak) {
  if (topo.nics.empty() || gpuIndex < 0 || gpuIndex >= static_cast<int>(topo.gpus.size())) return -1;
  const Device& gpu = topo.gpus[gpuIndex];
  LinkType best = LinkType::kSys;
  for (const Device& nic : topo.nics) best = std::min(best, linkBetween(gpu, nic));
  std::vector<int> candidates;
  for (int i = 0; i < static_cast<int>(topo.nics.size()); ++i)
    if (linkBetween(gpu, topo.nics[i]) == best) candidates.push_back(i);
  if (tieBreak < 0) tieBreak = 0;
  return candidates[tieBreak % candidates.size()];
}

}  // namespace tsr::topology
