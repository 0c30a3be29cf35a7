// Local topology at communicator creation: optionally dump the machine's hwloc XML
// (TSR_TOPO_DUMP_FILE, %r/%h expanded), then bind this rank to the cores chosen by
// topology/binding.h (TSR_BIND=none|numa|core, default numa) before the progress thread
// starts, so the thread inherits the binding. The machine comes from hwloc discovery or from
// TSR_TOPO_FILE.
#pragma once

#include <string>

#include "base/status.h"
#include "runtime/config.h"

namespace tsr::runtime {

// Returns what was done, for the log ("local rank 1: numa -> NUMA 0, PUs 0-15 (...)").
Result<std::string> setUpLocalTopology(const Config& config, int rank, int localRank,
                                       int localSize, const std::string& host);

}  // namespace tsr::runtime
