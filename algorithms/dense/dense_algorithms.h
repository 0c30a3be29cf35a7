// The dense algorithms by name: the one table TSR_ALGO's accepted values, the selector, the
// cost model's candidates (a test holds them equal), tsr-bench's --algo and tsr-info take
// their names from.
#pragma once

#include <string>
#include <vector>

namespace tsr::algorithms {

struct DenseAlgorithmInfo {
  const char* name;  // TSR_ALGO=NAME
  bool allreduce;    // serves the allreduce
  bool allgather;    // serves the all-gather
  // Built as a plan by the selector (dense_selector.h) and ranked by the cost model; false for
  // shm, the runtime's shared-memory route for small messages on one host.
  bool planned;
  const char* description;  // one line, for people
};

const std::vector<DenseAlgorithmInfo>& denseAlgorithms();

// The planned algorithms serving the allreduce (allgather = false) or the all-gather, in the
// table's order.
std::vector<std::string> plannedAlgorithms(bool allgather);

// "auto|ring|torus|...": TSR_ALGO's accepted values.
std::string denseAlgorithmChoices();

}  // namespace tsr::algorithms
