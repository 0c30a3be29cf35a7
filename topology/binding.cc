#include "topology/binding.h"

#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/logging.h"

namespace tsr::topology {

const char* bindModeName(BindMode mode) {
  switch (mode) {
    case BindMode::kNone:
      return "none";
    case BindMode::kNuma:
      return "numa";
    case BindMode::kCore:
      return "core";
  }
  return "?";
}

Result<BindMode> parseBindMode(const std::string& text) {
  if (text == "none") return BindMode::kNone;
  if (text == "numa") return BindMode::kNuma;
  if (text == "core") return BindMode::kCore;
  return Status(Code::kInvalidArgument, "bind mode '" + text + "' is not one of none|numa|core (TSR_BIND)");
}

DeviceAssignment assignDevices(const MachineTopology& topo, int localRank, int localSize) {
  DeviceAssignment out;
  int numGpus = static_cast<int>(topo.gpus.size());
  int numNics = static_cast<int>(topo.nics.size());
  if (numGpus > 0) {
    out.gpu = localRank % numGpus;
    // Ranks that share a GPU set (round r of the deal) spread over equally near NICs.
    out.nic = nearestNic(topo, out.gpu, localRank / numGpus + out.gpu);
    const Device& gpu = topo.gpus[out.gpu];
    if (gpu.numaNode >= 0) {
      out.numaNode = gpu.numaNode;
      out.reason = "GPU " + gpu.name + " (" + gpu.busId + ") on NUMA " + std::to_string(gpu.numaNode);
      return out;
    }
  } else if (numNics > 0) {
    out.nic = localRank % numNics;
  }
  // Near the NIC while its node has a core for every local rank; past that the ranks would
  // share its cores with the other nodes idle (mpirun's --map-by numa spreads them), so they go
  // round-robin over the nodes, each keeping its NIC.
  std::string crowded;
  if (out.nic >= 0 && topo.nics[out.nic].numaNode >= 0) {
    const Device& nic = topo.nics[out.nic];
    const int node = nic.numaNode;
    const int cores =
        node < static_cast<int>(topo.numaNodes.size()) ? static_cast<int>(topo.numaNodes[node].cores.size()) : 0;
    if (numGpus > 0 || topo.numaNodes.size() < 2 || localSize <= cores) {
      out.numaNode = node;
      out.reason = "NIC " + nic.name + " (" + nic.busId + ") on NUMA " + std::to_string(node);
      return out;
    }
    crowded = "; the NIC's NUMA " + std::to_string(node) + " has " + std::to_string(cores) + " cores for " +
              std::to_string(localSize) + " local ranks";
  }
  if (!topo.numaNodes.empty()) {
    out.numaNode = localRank % static_cast<int>(topo.numaNodes.size());
    out.reason = "round-robin over " + std::to_string(topo.numaNodes.size()) + " NUMA node(s)" + crowded;
  } else {
    out.reason = "no NUMA information";
  }
  return out;
}

BindingPlan chooseBinding(const MachineTopology& topo, int localRank, int localSize, BindMode mode) {
  BindingPlan plan;
  plan.mode = mode;
  plan.localRank = localRank;
  plan.devices = assignDevices(topo, localRank, localSize);
  int node = plan.devices.numaNode;
  if (mode == BindMode::kNone || node < 0) return plan;
  if (mode == BindMode::kNuma) {
    plan.pus = topo.numaPus(node);
    return plan;
  }
  // core: this rank's slice among the local ranks placed on the same NUMA node.
  int sharers = 0, slot = 0;
  for (int r = 0; r < std::max(localSize, localRank + 1); ++r) {
    if (assignDevices(topo, r, localSize).numaNode != node) continue;
    if (r == localRank) slot = sharers;
    ++sharers;
  }
  const auto& cores = topo.numaNodes[node].cores;
  int numCores = static_cast<int>(cores.size());
  if (numCores == 0) return plan;
  int begin, end;
  if (sharers <= numCores) {
    begin = slot * numCores / sharers;
    end = (slot + 1) * numCores / sharers;
  } else {
    begin = slot % numCores;
    end = begin + 1;
  }
  for (int c = begin; c < end; ++c) plan.pus.insert(plan.pus.end(), cores[c].begin(), cores[c].end());
  std::sort(plan.pus.begin(), plan.pus.end());
  return plan;
}

std::string formatCpuList(const std::vector<int>& pus) {
  std::string out;
  for (std::size_t i = 0; i < pus.size();) {
    std::size_t j = i;
    while (j + 1 < pus.size() && pus[j + 1] == pus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(pus[i]);
    if (j > i) out += '-' + std::to_string(pus[j]);
    i = j + 1;
  }
  return out;
}

std::string BindingPlan::describe() const {
  std::string out = "local rank " + std::to_string(localRank) + ": " + bindModeName(mode);
  if (mode == BindMode::kNone) return out + " (not bound; " + devices.reason + ")";
  if (pus.empty()) return out + " -> not bound (" + devices.reason + ")";
  return out + " -> NUMA " + std::to_string(devices.numaNode) + ", PUs " + formatCpuList(pus) + " (" + devices.reason +
         ")";
}

Status applyBinding(const BindingPlan& plan) {
  auto logger = log::get("topology");
  if (plan.mode == BindMode::kNone || plan.pus.empty()) {
    logger->info("binding: {}", plan.describe());
    return Status::ok();
  }
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) != 0) return Status(Code::kInternal, "hwloc_topology_init failed");
  Status status;
  if (hwloc_topology_load(topo) != 0) {
    status = Status(Code::kInternal, "hwloc_topology_load failed before binding");
  } else {
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    for (int pu : plan.pus) hwloc_bitmap_set(set, static_cast<unsigned>(pu));
    if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) != 0) {
      status = Status(Code::kInvalidArgument, "cannot bind local rank " + std::to_string(plan.localRank) + " to PUs " +
                                                  formatCpuList(plan.pus) + ": " + std::strerror(errno));
    }
    hwloc_bitmap_free(set);
  }
  hwloc_topology_destroy(topo);
  if (status.isOk()) logger->info("binding: {}", plan.describe());
  return status;
}

}  // namespace tsr::topology
