#include "topology/discovery.h"

#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/bounded_file.h"

namespace tsr::topology {
namespace {

// Owns one hwloc topology; destroyed on every path.
struct HwlocTopology {
  hwloc_topology_t handle = nullptr;
  HwlocTopology() = default;
  HwlocTopology(const HwlocTopology&) = delete;
  HwlocTopology& operator=(const HwlocTopology&) = delete;
  ~HwlocTopology() {
    if (handle) hwloc_topology_destroy(handle);
  }
};

// Creates a topology with I/O devices enabled; the caller sets the source and loads.
Status initTopology(HwlocTopology& topo) {
  if (hwloc_topology_init(&topo.handle) != 0) {
    topo.handle = nullptr;
    return Status(Code::kInternal, "hwloc_topology_init failed");
  }
  hwloc_topology_set_io_types_filter(topo.handle, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  return Status::ok();
}

Result<std::string> readFile(const std::string& path) {
  return readBoundedFile(path, kMaxTopologyXmlBytes, "topology XML file");
}

std::string bridgeName(hwloc_obj_t bridge) {
  char text[48];
  const auto& down = bridge->attr->bridge.downstream.pci;
  std::snprintf(text, sizeof(text), "%s%04x:[%02x-%02x]",
                bridge->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST ? "hb" : "",
                static_cast<unsigned>(down.domain), down.secondary_bus, down.subordinate_bus);
  return text;
}

std::string busIdOf(hwloc_obj_t pci) {
  char text[32];
  const auto& a = pci->attr->pcidev;
  std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%01x", static_cast<unsigned>(a.domain), a.bus, a.dev, a.func);
  return text;
}

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Lower rank = preferred display name for a GPU.
int gpuNameRank(const std::string& name) {
  if (startsWith(name, "cuda")) return 0;
  if (startsWith(name, "rsmi")) return 1;
  if (startsWith(name, "nvml")) return 2;
  if (startsWith(name, "opencl")) return 3;
  return 4;
}

void fillLocality(hwloc_topology_t topo, hwloc_obj_t pci, Device& device) {
  for (hwloc_obj_t parent = pci->parent; parent && parent->type == HWLOC_OBJ_BRIDGE; parent = parent->parent)
    device.pciPath.push_back(bridgeName(parent));
  std::reverse(device.pciPath.begin(), device.pciPath.end());
  hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(topo, pci);
  if (!anchor) return;
  if (anchor->nodeset && hwloc_bitmap_weight(anchor->nodeset) == 1) {
    hwloc_obj_t node = hwloc_get_numanode_obj_by_os_index(topo, hwloc_bitmap_first(anchor->nodeset));
    if (node) device.numaNode = static_cast<int>(node->logical_index);
  }
  hwloc_obj_t package =
      anchor->type == HWLOC_OBJ_PACKAGE ? anchor : hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, anchor);
  if (package) device.package = static_cast<int>(package->logical_index);
}

void collectDevices(hwloc_topology_t topo, MachineTopology& out) {
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci; pci = hwloc_get_next_pcidev(topo, pci)) {
    const auto& attr = pci->attr->pcidev;
    Device device;
    device.busId = busIdOf(pci);
    device.vendorId = attr.vendor_id;
    device.deviceId = attr.device_id;
    device.classId = attr.class_id;
    bool gpuOsDev = false;
    bool netOsDev = false;
    std::string fabricName, netName;
    for (hwloc_obj_t child = pci->io_first_child; child; child = child->next_sibling) {
      if (child->type != HWLOC_OBJ_OS_DEVICE || !child->name) continue;
      std::string name = child->name;
      device.osNames.push_back(name);
      switch (child->attr->osdev.type) {
        case HWLOC_OBJ_OSDEV_COPROC:
        case HWLOC_OBJ_OSDEV_GPU:
          if (startsWith(name, "cuda") || startsWith(name, "nvml") || startsWith(name, "rsmi")) gpuOsDev = true;
          if (const char* model = hwloc_obj_get_info_by_name(child, "GPUModel")) device.model = model;
          break;
        case HWLOC_OBJ_OSDEV_NETWORK:
          netOsDev = true;
          if (netName.empty()) netName = name;
          break;
        case HWLOC_OBJ_OSDEV_OPENFABRICS:
          netOsDev = true;
          if (fabricName.empty()) fabricName = name;
          break;
        default:
          break;
      }
    }
    bool displayClass = (attr.class_id >> 8) == 0x03;
    bool gpuVendor = attr.vendor_id == 0x10de || attr.vendor_id == 0x1002;
    if ((displayClass && gpuVendor) || gpuOsDev) {
      device.kind = DeviceKind::kGpu;
      for (const std::string& name : device.osNames)
        if (device.name.empty() || gpuNameRank(name) < gpuNameRank(device.name)) device.name = name;
      if (device.name.empty()) device.name = "gpu" + std::to_string(out.gpus.size());
    } else if (netOsDev) {
      device.kind = DeviceKind::kNic;
      device.name = fabricName.empty() ? netName : fabricName;
    } else {
      continue;
    }
    fillLocality(topo, pci, device);
    (device.kind == DeviceKind::kGpu ? out.gpus : out.nics).push_back(std::move(device));
  }
}

void collectCpus(hwloc_topology_t topo, MachineTopology& out) {
  if (const char* host = hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), "HostName")) out.hostname = host;
  int numCoreObjs = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  out.numPus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  out.numCores = numCoreObjs > 0 ? numCoreObjs : out.numPus;
  // Cores are counted by PU when the platform reports no Core objects.
  hwloc_obj_type_t coreType = numCoreObjs > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;

  int numPackages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  for (int i = 0; i < numPackages; ++i) {
    hwloc_obj_t obj = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, i);
    Package package;
    package.index = static_cast<int>(obj->logical_index);
    package.osIndex = static_cast<int>(obj->os_index);
    if (const char* model = hwloc_obj_get_info_by_name(obj, "CPUModel")) package.model = model;
    package.numCores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, obj->cpuset, coreType);
    package.numPus = hwloc_get_nbobjs_inside_cpuset_by_type(topo, obj->cpuset, HWLOC_OBJ_PU);
    out.packages.push_back(package);
  }

  int numNodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < numNodes; ++i) {
    hwloc_obj_t obj = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, i);
    NumaNode node;
    node.index = static_cast<int>(obj->logical_index);
    node.osIndex = static_cast<int>(obj->os_index);
    node.memoryBytes = obj->attr ? obj->attr->numanode.local_memory : 0;
    hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, obj);
    if (package) node.package = static_cast<int>(package->logical_index);
    hwloc_obj_t core = nullptr;
    while ((core = hwloc_get_next_obj_inside_cpuset_by_type(topo, obj->cpuset, coreType, core))) {
      std::vector<int> pus;
      hwloc_obj_t pu = nullptr;
      while ((pu = hwloc_get_next_obj_inside_cpuset_by_type(topo, core->cpuset, HWLOC_OBJ_PU, pu)))
        pus.push_back(static_cast<int>(pu->os_index));
      node.cores.push_back(std::move(pus));
    }
    out.numaNodes.push_back(std::move(node));
  }
}

Result<MachineTopology> convert(hwloc_topology_t topo) {
  MachineTopology out;
  collectCpus(topo, out);
  collectDevices(topo, out);
  return out;
}

}  // namespace

Result<MachineTopology> discoverLocal() {
  HwlocTopology topo;
  TSR_RETURN_IF_ERROR(initTopology(topo));
  if (hwloc_topology_load(topo.handle) != 0)
    return Status(Code::kInternal, std::string("hwloc_topology_load failed: ") + std::strerror(errno));
  return convert(topo.handle);
}

Result<MachineTopology> loadXmlText(const std::string& xml, const std::string& sourceName) {
  if (xml.find("<topology") == std::string::npos) {
    return Status(Code::kInvalidArgument,
                  "topology XML file '" + sourceName + "' is not hwloc XML (no <topology> element)");
  }
  HwlocTopology topo;
  TSR_RETURN_IF_ERROR(initTopology(topo));
  if (hwloc_topology_set_xmlbuffer(topo.handle, xml.c_str(), static_cast<int>(xml.size() + 1)) != 0)
    return Status(Code::kInvalidArgument, "topology XML file '" + sourceName + "' is not valid hwloc XML");
  if (hwloc_topology_load(topo.handle) != 0)
    return Status(Code::kInvalidArgument,
                  "topology XML file '" + sourceName + "' could not be loaded by hwloc (invalid content)");
  TSR_ASSIGN_OR_RETURN(MachineTopology machine, convert(topo.handle));
  if (machine.numPus == 0)
    return Status(Code::kInvalidArgument, "topology XML file '" + sourceName + "' describes no processing units");
  return machine;
}

Result<MachineTopology> loadXml(const std::string& path) {
  TSR_ASSIGN_OR_RETURN(std::string xml, readFile(path));
  return loadXmlText(xml, path);
}

Status dumpXml(const std::string& outPath, const std::string& fromXml) {
  HwlocTopology topo;
  TSR_RETURN_IF_ERROR(initTopology(topo));
  std::string xml;
  if (!fromXml.empty()) {
    TSR_ASSIGN_OR_RETURN(xml, readFile(fromXml));
    if (hwloc_topology_set_xmlbuffer(topo.handle, xml.c_str(), static_cast<int>(xml.size() + 1)) != 0)
      return Status(Code::kInvalidArgument, "topology XML file '" + fromXml + "' is not valid hwloc XML");
  }
  if (hwloc_topology_load(topo.handle) != 0)
    return Status(Code::kInvalidArgument,
                  "hwloc could not load the topology" + (fromXml.empty() ? std::string() : " of '" + fromXml + "'"));
  if (hwloc_topology_export_xml(topo.handle, outPath.c_str(), 0) != 0)
    return Status(Code::kInvalidArgument, "cannot write topology XML to '" + outPath + "': " + std::strerror(errno));
  return Status::ok();
}

}  // namespace tsr::topology
