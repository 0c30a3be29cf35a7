#include "runtime/local_topology.h"

#include "base/logging.h"
#include "topology/binding.h"
#include "topology/discovery.h"

namespace tsr::runtime {

Result<std::string> setUpLocalTopology(const Config& config, int rank, int localRank,
                                       int localSize, const std::string& host) {
  const std::string file = config.get("TSR_TOPO_FILE");
  const std::string dump = config.get("TSR_TOPO_DUMP_FILE");
  if (!dump.empty()) {
    std::string path = log::expandFilePattern(dump, rank, host);
    Status st = topology::dumpXml(path, file);
    if (!st.isOk())
      return Status(st.code(), "TSR_TOPO_DUMP_FILE=" + dump + ": " + st.message());
  }
  TSR_ASSIGN_OR_RETURN(topology::BindMode mode, topology::parseBindMode(config.get("TSR_BIND")));
  if (mode == topology::BindMode::kNone) return std::string("no binding (TSR_BIND=none)");
  auto machine = file.empty() ? topology::discoverLocal() : topology::loadXml(file);
  if (!machine.isOk())
    return Status(machine.status().code(),
                  (file.empty() ? std::string("topology discovery") : "TSR_TOPO_FILE=" + file) +
                      ": " + machine.status().message());
  topology::BindingPlan plan = topology::chooseBinding(machine.value(), localRank, localSize, mode);
  // A topology read from a file may describe another machine: its PUs are not ours to bind.
  if (!file.empty()) return "binding not applied (topology from " + file + "): " + plan.describe();
  TSR_RETURN_IF_ERROR(topology::applyBinding(plan));
  return plan.describe();
}

}  // namespace tsr::runtime
