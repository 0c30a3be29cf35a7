// tsr-soak's two phases on one rank: the mixed collectives (every result checked) on one
// communicator per setup, then communicator create/destroy cycles, with the rank's figures
// sampled along the way (soak_resources.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/communicator.h"
#include "tools/soak/soak_options.h"
#include "tools/soak/soak_plan.h"
#include "tools/soak/soak_resources.h"

namespace tsr::tools::soak {

// A communicator from the launcher's environment with the setup's TSR_ALGO and host layout
// (none: the environment as it is). TSR_TIMEOUT_MS is options.timeoutMs unless set.
Result<std::unique_ptr<runtime::Communicator>> createCommunicator(const Setup* setup, const SoakOptions& options);

struct PhaseRecord {
  std::vector<Sample> samples;
  uint64_t done = 0;  // operations or cycles completed
  uint64_t warmupEnd = 0;
  double seconds = 0;
  uint64_t bytes = 0;  // phase 1: bytes of the collectives' larger buffers, summed
};

struct RankRecord {
  PhaseRecord mixed, cycles;
  // "allreduce on torus: torus" -> how many operations that setup's communicator ran with
  // that algorithm (Request::algorithm()), so a forced algorithm that fell back shows.
  std::map<std::string, uint64_t> served;
  std::string failure;  // the first wrong result or failed call, named; empty: none
};

// Phase 1: options.ops operations of the seeded sequence, comms[i] serving setups[i].
void runMixed(const std::vector<runtime::Communicator*>& comms, const std::vector<Setup>& setups,
              const SoakOptions& options, RankRecord* record);

// Phase 2: options.cycles times, a communicator of the next setup (in turn) is created, runs a
// barrier and a checked allreduce, and is destroyed.
void runCycles(const std::vector<Setup>& setups, const SoakOptions& options, int rank, int size, RankRecord* record);

}  // namespace tsr::tools::soak
