// Graphviz rendering (`tsr-topo --dot`): the job's ring and torus when a hostfile is given
// (one cluster per host, host-crossing ring edges red and bold, torus column edges dashed),
// otherwise the machine (one cluster per socket, NUMA nodes, GPUs and NICs under them, and an
// edge from each GPU to its nearest NIC labelled with the link type).
#include <sstream>

#include "tools/topo/report.h"

namespace tsr::tools::topo {

using namespace tsr::topology;

namespace {

std::string renderJobDot(const JobView& job) {
  const HostMap& hosts = job.hosts;
  std::ostringstream out;
  out << "digraph tessera_job {\n  rankdir=LR;\n  node [shape=circle];\n";
  for (std::size_t h = 0; h < hosts.hosts.size(); ++h) {
    out << "  subgraph cluster_host" << h << " {\n    label=\"" << hosts.hosts[h].name << "\";\n";
    for (int r : hosts.hosts[h].ranks) out << "    r" << r << " [label=\"" << r << "\"];\n";
    out << "  }\n";
  }
  int n = static_cast<int>(job.ring.size());
  for (int p = 0; n > 1 && p < n; ++p) {
    int a = job.ring[p], b = job.ring[(p + 1) % n];
    out << "  r" << a << " -> r" << b << (hosts.sameHost(a, b) ? " [color=black];\n" : " [color=red, penwidth=2.5];\n");
  }
  if (job.torus) {
    const TorusLayout& t = *job.torus;
    for (int col = 0; t.y > 1 && col < t.x; ++col)
      for (int row = 0; row < t.y; ++row)
        out << "  r" << t.grid[row][col] << " -> r" << t.grid[(row + 1) % t.y][col]
            << " [style=dashed, color=blue, constraint=false];\n";
  }
  out << "}\n";
  return out.str();
}

std::string renderMachineDot(const Report& report) {
  const MachineTopology& m = report.machine;
  std::ostringstream out;
  out << "graph tessera_machine {\n  label=\"" << m.hostname << "\";\n  node [shape=box];\n";
  auto deviceNodes = [&](int numa) {
    for (std::size_t i = 0; i < m.gpus.size(); ++i)
      if (m.gpus[i].numaNode == numa)
        out << "      gpu" << i << " [label=\"GPU" << i << "\\n"
            << m.gpus[i].name << "\\n"
            << m.gpus[i].busId << "\", style=filled, fillcolor=palegreen];\n";
    for (std::size_t i = 0; i < m.nics.size(); ++i)
      if (m.nics[i].numaNode == numa)
        out << "      nic" << i << " [label=\"NIC" << i << "\\n"
            << m.nics[i].name << "\\n"
            << m.nics[i].busId << "\", style=filled, fillcolor=lightblue];\n";
  };
  for (const NumaNode& node : m.numaNodes) {
    out << "  subgraph cluster_numa" << node.index << " {\n    label=\"NUMA " << node.index;
    if (node.package >= 0) out << " (socket " << node.package << ")";
    out << "\\n" << formatBytes(node.memoryBytes) << ", PUs " << formatCpuList(m.numaPus(node.index)) << "\";\n";
    out << "      numa" << node.index << " [label=\"NUMA " << node.index << "\", shape=ellipse];\n";
    deviceNodes(node.index);
    out << "  }\n";
  }
  deviceNodes(-1);
  for (std::size_t i = 1; i < m.numaNodes.size(); ++i)
    out << "  numa" << i - 1 << " -- numa" << i << " [label=\"SYS\"];\n";
  for (std::size_t g = 0; g < m.gpus.size(); ++g) {
    int nic = nearestNic(m, static_cast<int>(g), 0);
    if (nic >= 0)
      out << "  gpu" << g << " -- nic" << nic << " [label=\"" << linkTypeName(linkBetween(m.gpus[g], m.nics[nic]))
          << "\"];\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace

std::string renderDot(const Report& report) {
  return report.job ? renderJobDot(*report.job) : renderMachineDot(report);
}

}  // namespace tsr::tools::topo
