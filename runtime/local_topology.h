// Local topology at communicator creation: optionally dump the machine's hwloc XML
// (TSR_TOPO_DUMP_FILE, %r/%h expanded), then bind this rank to the cores chosen by
// topology/binding.h (TSR_BIND=none|numa|core, default numa) before the progress thread
// starts, so the thread inherits the binding. The machine comes from hwloc discovery or from
// TSR_TOPO_FILE. Discovery runs once per process (the machine does not change while it runs):
// each run costs milliseconds and leaves about 1 KiB behind in libpciaccess (hwloc's PCI
// plugin), which a process creating many communicators would otherwise keep adding up.
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"
#include "runtime/config.h"

namespace tsr::runtime {

struct LocalPlacement {
  std::string description;  // what was done, for the log ("local rank 1: numa -> NUMA 0, ...")
  int numaNode = -1;        // NUMA node this rank works near (-1 unknown)
  std::string locality;     // topology::localityKey of its GPU, else NIC ("" unknown)
};

LocalPlacement setUpLocalTopology(const Config& config, int rank, int localRank, int localSize, const std::string& host,
                                  Status* error);

// How many times this process has run hwloc discovery of the live machine (tests).
size_t localDiscoveries();

}  // namespace tsr::runtime
