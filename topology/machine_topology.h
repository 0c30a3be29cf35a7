// MachineTopology: what one machine looks like, as plain data.
//
// Discovery (discovery.h) fills it from hwloc, live or from an hwloc XML file; everything after
// discovery (binding choice, ring ordering, the tsr-topo printouts) is pure code over this
// struct, so any machine can be described in a test.
//
// Vocabulary:
//  * PCI path: the chain of bridges above a device, top down, each named by the bus range it
//    forwards ("0000:[12-1f]"); the first entry is the host bridge (root complex). Two devices
//    under one subtree share a prefix of their paths.
//  * LinkType: how far apart two devices are, with the labels of `nvidia-smi topo -m`:
//      X    the same device
//      PIX  at most one PCIe switch between them (same switch, no host bridge)
//      PXB  several PCIe bridges/switches, but not the host bridge
//      PHB  through a PCIe host bridge (same root complex)
//      NODE across host bridges inside one NUMA node
//      SYS  across the SMP interconnect between NUMA nodes (or sockets)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tsr::topology {

enum class LinkType { kSelf, kPix, kPxb, kPhb, kNode, kSys };

// "X", "PIX", "PXB", "PHB", "NODE", "SYS".
const char* linkTypeName(LinkType type);
// One line per label, the legend printed under the affinity matrix.
std::string linkTypeLegend();

struct NumaNode {
  int index = 0;                        // logical index, 0..n-1
  int osIndex = 0;                      // the OS's NUMA node number
  int package = -1;                     // logical index of the enclosing package, -1 unknown
  std::uint64_t memoryBytes = 0;        // local memory
  std::vector<std::vector<int>> cores;  // per core, the OS indices of its PUs
};

struct Package {
  int index = 0;
  int osIndex = 0;
  std::string model;  // CPUModel info, may be empty
  int numCores = 0;
  int numPus = 0;
};

enum class DeviceKind { kGpu, kNic };

struct Device {
  DeviceKind kind = DeviceKind::kGpu;
  std::string name;                  // preferred OS name: cuda0, rsmi0, mlx5_0, eth0, ...
  std::vector<std::string> osNames;  // every OS device hwloc shows for it (cuda0, nvml0, ...)
  std::string busId;                 // PCI bus id "0000:3b:00.0", empty when not a PCI device
  std::uint16_t vendorId = 0;
  std::uint16_t deviceId = 0;
  std::uint16_t classId = 0;  // PCI class, e.g. 0x0302 3D controller, 0x0207 InfiniBand
  std::string model;          // GPUModel info or empty
  int numaNode = -1;          // logical NUMA index nearest the device, -1 unknown
  int package = -1;
  std::vector<std::string> pciPath;  // bridges above it, host bridge first
};

struct MachineTopology {
  std::string hostname;
  std::vector<Package> packages;
  std::vector<NumaNode> numaNodes;
  int numCores = 0;
  int numPus = 0;
  std::vector<Device> gpus;
  std::vector<Device> nics;

  std::uint64_t totalMemoryBytes() const;
  // OS indices of every PU of one NUMA node, ascending.
  std::vector<int> numaPus(int numaIndex) const;
};

// Distance category between two devices of one machine.
LinkType linkBetween(const Device& a, const Device& b);

// A string that sorts devices by locality: devices under one bridge subtree are contiguous
// when sorted, and the NUMA node comes first ("n0/0000:[00-2f]/0000:[11-2f]/.../0000:14:00.0").
std::string localityKey(const Device& device);

// The index of the NIC nearest a GPU (best LinkType; ties broken round-robin by `tieBreak`),
// -1 when there is no NIC.
int nearestNic(const MachineTopology& topo, int gpuIndex, int tieBreak);

}  // namespace tsr::topology
