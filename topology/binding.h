// Binding: which GPU, NIC and cores each local rank of a host uses.
//
// Policy (pure, chooseBinding): local rank r uses GPU r mod G when the host has G GPUs, and the
// NIC nearest that GPU (best nvidia-smi link type, ties spread round-robin over the ranks);
// without GPUs it uses NIC r mod K. Its NUMA node is the GPU's, else the NIC's, else NUMA
// nodes are dealt round-robin. Modes (TSR_BIND):
//   none  no binding;
//   numa  every PU of that NUMA node;
//   core  the ranks that share a NUMA node split its cores into disjoint, contiguous slices
//         (when there are more ranks than cores, slices wrap and share cores).
// applyBinding is the only side effect (hwloc_set_cpubind on the whole process, so the
// progress thread started later inherits it).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "topology/machine_topology.h"

namespace tsr::topology {

enum class BindMode { kNone, kNuma, kCore };

const char* bindModeName(BindMode mode);
// "none" | "numa" | "core"; the error names the bad value and the accepted ones.
Result<BindMode> parseBindMode(const std::string& text);

struct DeviceAssignment {
  int gpu = -1;        // index into MachineTopology::gpus, -1 none
  int nic = -1;        // index into MachineTopology::nics, -1 none
  int numaNode = -1;   // logical NUMA index, -1 when the machine lists none
  std::string reason;  // "GPU cuda0 on NUMA 0", "NIC mlx5_0 on NUMA 1", "round-robin"
};

// Devices and NUMA node of local rank `localRank` among `localSize` ranks of one host.
DeviceAssignment assignDevices(const MachineTopology& topo, int localRank, int localSize);

struct BindingPlan {
  BindMode mode = BindMode::kNone;
  int localRank = 0;
  DeviceAssignment devices;
  std::vector<int> pus;          // OS PU indices to bind to; empty for mode none
  std::string describe() const;  // "local rank 1: numa -> NUMA 0, PUs 0-15 (GPU cuda1 ...)"
};

BindingPlan chooseBinding(const MachineTopology& topo, int localRank, int localSize, BindMode mode);

// Binds the calling process to plan.pus (no-op for mode none) and logs the choice at info.
Status applyBinding(const BindingPlan& plan);

// "0-3,8,10-11"
std::string formatCpuList(const std::vector<int>& pus);

}  // namespace tsr::topology
