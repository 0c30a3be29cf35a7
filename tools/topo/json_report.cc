// JSON rendering of a Report (`tsr-topo --json`). Fields (also in docs/topology.md):
//   source            "local machine" or the XML path
//   hostname          string
//   sockets, cores, pus, memory_bytes   integers (whole machine)
//   numa_nodes[]      {index, os_index, socket (-1 unknown), memory_bytes, cores, pus: "0-15"}
//   gpus[], nics[]    {index, label: "GPU0"/"NIC0", name, os_names[], bus_id, vendor_id: "0x10de",
//                      device_id, class_id, model, numa (-1 unknown), socket, pci_path[]}
//   matrix            {labels: ["GPU0",..,"NIC0",..], rows: [["X","PIX",..],..]} (nvidia-smi labels)
//   binding           {mode: none|numa|core, local_ranks,
//                      ranks[]: {local_rank, gpu, nic, numa (-1 none), pus: "0-15", reason}}
//   job (with --hostfile or -H)
//                     {hostfile or host_list, np, hosts[]: {name, ranks[]}, ring[]: ranks in ring order,
//                      host_crossings, torus: {x, y, note, grid[][]} or {available: false, note}}
#include <sstream>

#include "tools/topo/report.h"

namespace tsr::tools::topo {

using namespace tsr::topology;

namespace {

std::string quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char esc[8];
          std::snprintf(esc, sizeof(esc), "\\u%04x", c);
          out += esc;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string hex(unsigned value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%04x", value);
  return quote(text);
}

template <typename T, typename F>
std::string array(const std::vector<T>& items, F&& render) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + render(items[i]);
  return out + "]";
}

std::string ints(const std::vector<int>& values) {
  return array(values, [](int v) { return std::to_string(v); });
}

std::string strings(const std::vector<std::string>& values) {
  return array(values, [](const std::string& v) { return quote(v); });
}

std::string device(const Device& d, const std::string& label, int index) {
  std::ostringstream out;
  out << "{\"index\": " << index << ", \"label\": " << quote(label) << ", \"name\": " << quote(d.name)
      << ", \"os_names\": " << strings(d.osNames) << ", \"bus_id\": " << quote(d.busId)
      << ", \"vendor_id\": " << hex(d.vendorId) << ", \"device_id\": " << hex(d.deviceId)
      << ", \"class_id\": " << hex(d.classId) << ", \"model\": " << quote(d.model) << ", \"numa\": " << d.numaNode
      << ", \"socket\": " << d.package << ", \"pci_path\": " << strings(d.pciPath) << "}";
  return out.str();
}

}  // namespace

std::string renderJson(const Report& report) {
  const MachineTopology& m = report.machine;
  std::ostringstream out;
  out << "{\n  \"source\": " << quote(report.source) << ",\n  \"hostname\": " << quote(m.hostname)
      << ",\n  \"sockets\": " << m.packages.size() << ",\n  \"cores\": " << m.numCores << ",\n  \"pus\": " << m.numPus
      << ",\n  \"memory_bytes\": " << m.totalMemoryBytes()
      << ",\n  \"numa_nodes\": " << array(m.numaNodes, [&](const NumaNode& n) {
           std::ostringstream o;
           o << "{\"index\": " << n.index << ", \"os_index\": " << n.osIndex << ", \"socket\": " << n.package
             << ", \"memory_bytes\": " << n.memoryBytes << ", \"cores\": " << n.cores.size()
             << ", \"pus\": " << quote(formatCpuList(m.numaPus(n.index))) << "}";
           return o.str();
         });
  std::vector<std::string> labels = deviceLabels(m);
  out << ",\n  \"gpus\": [";
  for (std::size_t i = 0; i < m.gpus.size(); ++i)
    out << (i ? ", " : "") << "\n    " << device(m.gpus[i], labels[i], static_cast<int>(i));
  out << "],\n  \"nics\": [";
  for (std::size_t i = 0; i < m.nics.size(); ++i)
    out << (i ? ", " : "") << "\n    " << device(m.nics[i], labels[m.gpus.size() + i], static_cast<int>(i));
  out << "],\n  \"matrix\": {\"labels\": " << strings(labels) << ", \"rows\": [";
  std::vector<const Device*> devices = allDevices(m);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    std::vector<std::string> row;
    for (const Device* other : devices) row.push_back(linkTypeName(linkBetween(*devices[i], *other)));
    out << (i ? ", " : "") << "\n    " << strings(row);
  }
  out << "]},\n  \"binding\": {\"mode\": " << quote(bindModeName(report.bindMode))
      << ", \"local_ranks\": " << report.bindings.size() << ", \"ranks\": [";
  for (std::size_t i = 0; i < report.bindings.size(); ++i) {
    const BindingPlan& b = report.bindings[i];
    out << (i ? ", " : "") << "\n    {\"local_rank\": " << b.localRank << ", \"gpu\": " << b.devices.gpu
        << ", \"nic\": " << b.devices.nic << ", \"numa\": " << b.devices.numaNode
        << ", \"pus\": " << quote(formatCpuList(b.pus)) << ", \"reason\": " << quote(b.devices.reason) << "}";
  }
  out << "]}";
  if (report.job) {
    const JobView& job = *report.job;
    out << ",\n  \"job\": {"
        << (job.hostList.empty() ? "\"hostfile\": " + quote(job.hostfile) : "\"host_list\": " + quote(job.hostList))
        << ", \"np\": " << job.hosts.worldSize << ",\n    \"hosts\": "
        << array(
               job.hosts.hosts,
               [](const HostInfo& h) { return "{\"name\": " + quote(h.name) + ", \"ranks\": " + ints(h.ranks) + "}"; })
        << ",\n    \"ring\": " << ints(job.ring) << ", \"host_crossings\": " << job.hostCrossings
        << ",\n    \"torus\": ";
    if (job.torus) {
      out << "{\"available\": true, \"x\": " << job.torus->x << ", \"y\": " << job.torus->y
          << ", \"note\": " << quote(job.torusNote) << ", \"grid\": " << array(job.torus->grid, ints) << "}";
    } else {
      out << "{\"available\": false, \"note\": " << quote(job.torusNote) << "}";
    }
    out << "}";
  }
  out << "\n}\n";
  return out.str();
}

}  // namespace tsr::tools::topo
