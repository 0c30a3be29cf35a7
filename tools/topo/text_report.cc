// Plain-text rendering of a Report: summary, nvidia-smi-style affinity matrix, bindings, job.
#include <sstream>

#include "tools/topo/report.h"

namespace tsr::tools::topo {

using namespace tsr::topology;

namespace {

std::string pad(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string numaText(int numa) { return numa < 0 ? "N/A" : std::to_string(numa); }

void renderMachine(std::ostringstream& out, const Report& report) {
  const MachineTopology& m = report.machine;
  out << "Machine: " << (m.hostname.empty() ? "(unnamed)" : m.hostname) << " (" << report.source << ")\n";
  out << "  Sockets: " << m.packages.size() << "  NUMA nodes: " << m.numaNodes.size() << "  Cores: " << m.numCores
      << "  PUs: " << m.numPus << "  Memory: " << formatBytes(m.totalMemoryBytes()) << "\n";
  for (const Package& p : m.packages)
    out << "  Socket " << p.index << ": " << p.numCores << " cores, " << p.numPus << " PUs"
        << (p.model.empty() ? "" : ", " + p.model) << "\n";
  for (const NumaNode& n : m.numaNodes) {
    out << "  NUMA " << n.index << ": " << formatBytes(n.memoryBytes) << ", " << n.cores.size() << " cores, PUs "
        << formatCpuList(m.numaPus(n.index));
    if (n.package >= 0) out << ", socket " << n.package;
    out << "\n";
  }
  out << "  GPUs: " << (m.gpus.empty() ? "none" : std::to_string(m.gpus.size())) << "\n";
  for (std::size_t i = 0; i < m.gpus.size(); ++i) {
    const Device& g = m.gpus[i];
    out << "    GPU" << i << "  " << pad(g.name, 8) << " " << g.busId << "  NUMA " << numaText(g.numaNode)
        << (g.model.empty() ? "" : "  " + g.model) << "\n";
  }
  out << "  NICs: " << (m.nics.empty() ? "none" : std::to_string(m.nics.size())) << "\n";
  for (std::size_t i = 0; i < m.nics.size(); ++i) {
    const Device& n = m.nics[i];
    std::string names;
    for (const std::string& name : n.osNames)
      if (name != n.name) names += (names.empty() ? "" : ",") + name;
    out << "    NIC" << i << "  " << pad(n.name, 8) << " " << n.busId << "  NUMA " << numaText(n.numaNode)
        << (names.empty() ? "" : "  (" + names + ")") << "\n";
  }
}

void renderMatrix(std::ostringstream& out, const Report& report) {
  const MachineTopology& m = report.machine;
  std::vector<const Device*> devices = allDevices(m);
  out << "\nAffinity matrix:\n";
  if (devices.empty()) {
    out << "  no GPUs or NICs\n";
    return;
  }
  std::vector<std::string> labels = deviceLabels(m);
  const std::size_t w = 7;
  out << pad("", w);
  for (const std::string& label : labels) out << pad(label, w);
  out << pad("CPU Affinity", 16) << "NUMA Affinity\n";
  for (std::size_t i = 0; i < devices.size(); ++i) {
    out << pad(labels[i], w);
    for (std::size_t j = 0; j < devices.size(); ++j) out << pad(linkTypeName(linkBetween(*devices[i], *devices[j])), w);
    std::string cpus = formatCpuList(m.numaPus(devices[i]->numaNode));
    out << pad(cpus.empty() ? "N/A" : cpus, 16) << numaText(devices[i]->numaNode) << "\n";
  }
  out << "\nLegend:\n" << linkTypeLegend();
}

void renderBindings(std::ostringstream& out, const Report& report) {
  out << "\nBinding (TSR_BIND=" << bindModeName(report.bindMode) << ", " << report.bindings.size() << " local rank"
      << (report.bindings.size() == 1 ? "" : "s") << "):\n";
  for (const BindingPlan& plan : report.bindings) {
    std::string devices;
    if (plan.devices.gpu >= 0) devices = "GPU" + std::to_string(plan.devices.gpu);
    if (plan.devices.nic >= 0) devices += (devices.empty() ? "NIC" : ", NIC") + std::to_string(plan.devices.nic);
    out << "  " << plan.describe() << (devices.empty() ? "" : "  [" + devices + "]") << "\n";
  }
}

void renderJob(std::ostringstream& out, const JobView& job) {
  const HostMap& hosts = job.hosts;
  out << "\nJob: " << hosts.worldSize << " ranks on " << hosts.hosts.size() << " host"
      << (hosts.hosts.size() == 1 ? "" : "s") << " ("
      << (job.hostList.empty() ? "hostfile " + job.hostfile : "-H " + job.hostList)
      << "; each host assumed to look like this machine)\n";
  if (!job.alsoThisMachine.empty()) {  // as tsrun: every name of this machine is one host
    out << " ";
    for (const std::string& name : job.alsoThisMachine)
      out << ' ' << name << (&name == &job.alsoThisMachine.back() ? "" : ",");
    out << ": this machine, as " << job.thisMachine << " (one host, as tsrun runs them)\n";
  }
  for (const HostInfo& host : hosts.hosts) {
    out << "  host " << host.name << ": ranks";
    for (int r : host.ranks) out << ' ' << r;
    out << "\n";
  }
  out << "Ring order (==> marks a host-crossing edge):\n  ";
  int n = static_cast<int>(job.ring.size());
  for (int p = 0; p < n; ++p) {
    int next = job.ring[(p + 1) % n];
    out << job.ring[p];
    if (n > 1) out << (hosts.sameHost(job.ring[p], next) ? " -> " : " ==> ");
  }
  if (n > 1) out << "(" << job.ring[0] << ")";
  out << "\n  host-crossing edges: " << job.hostCrossings << "\n";
  if (!job.torus) {
    out << "Torus: not available: " << job.torusNote << "\n";
    return;
  }
  const TorusLayout& t = *job.torus;
  out << "Torus: " << t.x << " x " << t.y << " (" << job.torusNote << ")\n";
  for (int row = 0; row < t.y; ++row) {
    out << "  row " << row << " [" << hosts.hosts[hosts.hostOfRank[t.grid[row][0]]].name << "]:";
    for (int rank : t.grid[row]) out << ' ' << rank;
    bool oneHost = true;
    for (int rank : t.grid[row]) oneHost = oneHost && hosts.sameHost(rank, t.grid[row][0]);
    out << (oneHost ? "" : "  (row spans hosts)") << "\n";
  }
  int columnCrossings = 0;
  for (int col = 0; col < t.x; ++col)
    for (int row = 0; row < t.y; ++row)
      if (!hosts.sameHost(t.grid[row][col], t.grid[(row + 1) % t.y][col])) ++columnCrossings;
  out << "  column ring edges crossing hosts: " << columnCrossings << "\n";
}

}  // namespace

std::string renderText(const Report& report) {
  std::ostringstream out;
  renderMachine(out, report);
  renderMatrix(out, report);
  renderBindings(out, report);
  if (report.job) renderJob(out, *report.job);
  return out.str();
}

}  // namespace tsr::tools::topo
