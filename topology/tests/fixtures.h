// Paths of the hand-written hwloc XML fixtures (see fixtures/).
//  dual_socket_8gpu_4nic.xml   2 packages x (1 NUMA, 8 cores x 2 PUs); GPUs 0-3 + NICs 0-1 on
//                              package 0 (GPU0/1/NIC0 on one leaf switch, GPU2/3 on a second
//                              leaf under the same top switch, NIC1 on its own root complex),
//                              GPUs 4-7 + NICs 2-3 on package 1 (two switches straight under one
//                              host bridge). Every nvidia-smi link type occurs.
//  single_socket_2gpu_1nic.xml 1 package, 8 cores x 2 PUs, 2 GPUs on one switch, 1 Ethernet NIC.
//  cpu_only_2numa.xml          1 package split in 2 NUMA nodes x 4 cores, 1 Ethernet NIC on
//                              NUMA 1, no GPU.
#pragma once

#include <string>

#include "base/self_path.h"

namespace tsr::topology::testing {

// Copied beside the test binaries by topology/tests/CMakeLists.txt.
inline std::string fixture(const std::string& name) { return besideSelf("fixtures/topology/" + name); }

}  // namespace tsr::topology::testing
