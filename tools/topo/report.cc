#include "tools/topo/report.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "topology/local_host.h"

namespace tsr::tools::topo {

using namespace tsr::topology;

Report makeReport(std::string source, MachineTopology machine, BindMode mode, int localRanks) {
  Report report;
  report.source = std::move(source);
  report.machine = std::move(machine);
  report.bindMode = mode;
  setBindings(report, localRanks);
  return report;
}

void setBindings(Report& report, int localRanks) {
  report.bindings.clear();
  for (int r = 0; r < localRanks; ++r)
    report.bindings.push_back(chooseBinding(report.machine, r, localRanks, report.bindMode));
}

int mostRanksPerHost(const JobView& job) {
  size_t most = 0;
  for (const HostInfo& host : job.hosts.hosts) most = std::max(most, host.ranks.size());
  return static_cast<int>(most);
}

Result<JobView> makeJob(const Report& report, const std::string& hostfile, const std::string& hostList,
                        const std::vector<HostEntry>& slots, int np, const std::vector<std::string>& localNames) {
  TSR_ASSIGN_OR_RETURN(std::vector<int> hostOfRank,
                       mapRanksBySlot(slots, np, hostfile.empty() ? "the host list" : "the hostfile"));
  JobView job;
  job.hostfile = hostfile;
  job.hostList = hostList;
  job.slots = slots;
  // Entries tsrun would start on this machine (localhost, 127.0.0.1, its names) are one host,
  // with one local-rank space, as tsrun runs them.
  const std::vector<std::string> machineOf = machineNames(slots, localNames);
  for (size_t h = 0; h < slots.size(); ++h)
    if (machineOf[h] != slots[h].name) job.thisMachine = machineOf[h], job.alsoThisMachine.push_back(slots[h].name);
  std::map<std::string, int> localSize, nextLocal;
  for (int h : hostOfRank) ++localSize[machineOf[h]];
  std::vector<RankPlacement> placements;
  for (int r = 0; r < static_cast<int>(hostOfRank.size()); ++r) {
    const std::string& machine = machineOf[hostOfRank[r]];
    placements.push_back(placementOn(report.machine, r, nextLocal[machine]++, localSize[machine], machine));
  }
  TSR_ASSIGN_OR_RETURN(job.hosts, buildHostMap(placements));
  job.ring = ringOrder(job.hosts);
  job.hostCrossings = hostCrossings(job.hosts, job.ring);
  auto shape = torusShape(job.hosts);
  if (shape.isOk()) {
    auto layout = torusLayout(job.hosts, shape.value());
    if (layout.isOk()) {
      job.torus = layout.take();
      job.torusNote = shape.value().reason;
    } else {
      job.torusNote = layout.status().message();
    }
  } else {
    job.torusNote = shape.status().message();
  }
  return job;
}

std::string formatBytes(unsigned long long bytes) {
  char text[32];
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) value /= 1024.0, ++unit;
  std::snprintf(text, sizeof(text), "%.1f %s", value, units[unit]);
  return text;
}

std::vector<const Device*> allDevices(const MachineTopology& machine) {
  std::vector<const Device*> devices;
  for (const Device& gpu : machine.gpus) devices.push_back(&gpu);
  for (const Device& nic : machine.nics) devices.push_back(&nic);
  return devices;
}

std::vector<std::string> deviceLabels(const MachineTopology& machine) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < machine.gpus.size(); ++i) labels.push_back("GPU" + std::to_string(i));
  for (std::size_t i = 0; i < machine.nics.size(); ++i) labels.push_back("NIC" + std::to_string(i));
  return labels;
}

}  // namespace tsr::tools::topo
