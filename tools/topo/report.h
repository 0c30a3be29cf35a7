// tsr-topo's model and renderers: what the tool knows about one machine and, optionally, one
// job laid out on machines like it; printed as text, JSON or Graphviz.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "topology/binding.h"
#include "topology/host_map.h"
#include "topology/hostfile.h"
#include "topology/machine_topology.h"
#include "topology/torus_schedule.h"

namespace tsr::tools::topo {

// A job from a hostfile: every host is assumed to look like the inspected machine.
struct JobView {
  std::string hostfile;  // the hostfile's path, or
  std::string hostList;  // the -H list
  std::vector<topology::HostEntry> slots;
  // Entries that name this machine after the first one (127.0.0.1 after localhost): one host.
  std::string thisMachine;
  std::vector<std::string> alsoThisMachine;
  topology::HostMap hosts;
  std::vector<int> ring;  // ring order of ranks
  int hostCrossings = 0;
  std::optional<topology::TorusLayout> torus;
  std::string torusNote;  // shape reason, or why there is no torus
};

struct Report {
  std::string source;  // "local machine" or the XML path
  topology::MachineTopology machine;
  topology::BindMode bindMode = topology::BindMode::kNuma;
  std::vector<topology::BindingPlan> bindings;  // one per local rank
  std::optional<JobView> job;
};

Report makeReport(std::string source, topology::MachineTopology machine, topology::BindMode mode, int localRanks);
// The bindings of `localRanks` ranks on one machine (makeReport sets them; main sets them again
// for a job's ranks per host).
void setBindings(Report& report, int localRanks);
// The most ranks the job puts on one host: the local ranks a host of it binds.
int mostRanksPerHost(const JobView& job);
// Lays out `np` ranks (0 = every slot) of the hosts on machines like report.machine; the hosts
// came from `hostfile` or, when that is empty, from `hostList` (which errors name). Entries naming this machine
// (localNames, localhost, 127.x.x.x: topology/local_host.h) are one host, as tsrun runs them.
Result<JobView> makeJob(const Report& report, const std::string& hostfile, const std::string& hostList,
                        const std::vector<topology::HostEntry>& slots, int np,
                        const std::vector<std::string>& localNames);

std::string renderText(const Report& report);
std::string renderJson(const Report& report);
std::string renderDot(const Report& report);

// Helpers shared by the renderers.
std::string formatBytes(unsigned long long bytes);                                // "256.0 GiB"
std::vector<std::string> deviceLabels(const topology::MachineTopology& machine);  // GPU0.., NIC0..
std::vector<const topology::Device*> allDevices(const topology::MachineTopology& machine);

}  // namespace tsr::tools::topo
