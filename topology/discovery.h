// Discovery: hwloc -> MachineTopology, from the live machine or from an hwloc XML file.
//
// This is the only code (with binding.cc) that talks to hwloc. I/O devices are kept
// (HWLOC_TYPE_FILTER_KEEP_IMPORTANT), so GPUs, NICs and the PCI bridges above them are seen.
// A GPU is a PCI device of class display (0x03xx) from NVIDIA (0x10de) or AMD (0x1002), or any
// PCI device carrying a CUDA/NVML/RSMI OS device. A NIC is a PCI device carrying a network or
// OpenFabrics OS device (one NIC per PCI function, however many OS names it has).
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"
#include "topology/machine_topology.h"

namespace tsr::topology {

// The machine this process runs on.
Result<MachineTopology> discoverLocal();

// Largest topology XML file read: a large machine's is a few MB; a wrong path (/dev/zero, a
// log) must not fill the memory.
constexpr size_t kMaxTopologyXmlBytes = size_t{32} << 20;

// A machine described by an hwloc XML file (hwloc 1.x or 2.x format, as `lstopo --of xml` writes).
// Errors name the file: unreadable, larger than kMaxTopologyXmlBytes, not hwloc XML, or empty.
Result<MachineTopology> loadXml(const std::string& path);

// The same from XML text in memory; `sourceName` is used in error messages.
Result<MachineTopology> loadXmlText(const std::string& xml, const std::string& sourceName);

// Writes hwloc XML for the local machine (when `fromXml` is empty) or re-exports the topology of
// the XML file `fromXml`, to `outPath`.
Status dumpXml(const std::string& outPath, const std::string& fromXml = "");

}  // namespace tsr::topology
