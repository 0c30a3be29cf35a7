#include "runtime/local_topology.h"

#include <mutex>
#include <optional>

#include "base/logging.h"
#include "topology/binding.h"
#include "topology/discovery.h"
#include "topology/host_map.h"

namespace tsr::runtime {

namespace {

std::mutex discoveryMutex;
std::optional<topology::MachineTopology> discoveredMachine;  // guarded by discoveryMutex
size_t discoveryRuns = 0;                                    // guarded by discoveryMutex

// The live machine, discovered by the first communicator that needs it; a failed discovery is
// not kept, so the next communicator tries again.
Result<topology::MachineTopology> localMachine() {
  std::lock_guard<std::mutex> lock(discoveryMutex);
  if (!discoveredMachine) {
    ++discoveryRuns;
    auto machine = topology::discoverLocal();
    if (!machine.isOk()) return machine.status();
    discoveredMachine = machine.take();
  }
  return *discoveredMachine;
}

}  // namespace

size_t localDiscoveries() {
  std::lock_guard<std::mutex> lock(discoveryMutex);
  return discoveryRuns;
}

LocalPlacement setUpLocalTopology(const Config& config, int rank, int localRank, int localSize, const std::string& host,
                                  Status* error) {
  LocalPlacement out;
  *error = Status::ok();
  const std::string file = config.get("TSR_TOPO_FILE");
  const std::string dump = config.get("TSR_TOPO_DUMP_FILE");
  if (!dump.empty()) {
    std::string path = log::expandFilePattern(dump, rank, host);
    Status st = topology::dumpXml(path, file);
    if (!st.isOk()) {
      *error = Status(st.code(), "TSR_TOPO_DUMP_FILE=" + dump + ": " + st.message());
      return out;
    }
  }
  auto mode = topology::parseBindMode(config.get("TSR_BIND"));
  if (!mode.isOk()) {
    *error = mode.status();
    return out;
  }
  auto machine = file.empty() ? localMachine() : topology::loadXml(file);
  if (!machine.isOk()) {
    *error =
        Status(machine.status().code(), (file.empty() ? std::string("topology discovery") : "TSR_TOPO_FILE=" + file) +
                                            ": " + machine.status().message());
    return out;
  }
  topology::RankPlacement placement = topology::placementOn(machine.value(), rank, localRank, localSize, host);
  out.numaNode = placement.numaNode;
  out.locality = placement.locality;
  if (mode.value() == topology::BindMode::kNone) {
    out.description = "no binding (TSR_BIND=none)";
    return out;
  }
  topology::BindingPlan plan = topology::chooseBinding(machine.value(), localRank, localSize, mode.value());
  // A topology read from a file may describe another machine: its PUs are not ours to bind.
  if (!file.empty()) {
    out.description = "binding not applied (topology from " + file + "): " + plan.describe();
    return out;
  }
  *error = topology::applyBinding(plan);
  out.description = plan.describe();
  return out;
}

}  // namespace tsr::runtime
