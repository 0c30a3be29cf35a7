// The dense algorithm table (see dense_algorithms.h).
#include "algorithms/dense/dense_algorithms.h"

namespace tsr::algorithms {

const std::vector<DenseAlgorithmInfo>& denseAlgorithms() {
  static const std::vector<DenseAlgorithmInfo> table = {
      {"ring", true, true, true, "pipelined ring: reduce-scatter then all-gather; bandwidth-optimal on any N"},
      {"torus", true, false, true, "2D torus on the host grid: rings inside hosts, then across them"},
      {"hier", true, false, true, "two-level: reduce-scatter inside hosts, Rabenseifner across, all-gather inside"},
      {"rabenseifner", true, false, true, "recursive halving and doubling, with a fold for non-powers of two"},
      {"doubling", true, false, true, "recursive doubling of the whole buffer: the fewest steps for small messages"},
      {"bruck", false, true, true, "Bruck's all-gather: log2 N steps"},
      {"shm", true, false, false, "1 B..4 KiB through a shared-memory board, every rank on one host"},
  };
  return table;
}

std::vector<std::string> plannedAlgorithms(bool allgather) {
  std::vector<std::string> names;
  for (const DenseAlgorithmInfo& a : denseAlgorithms())
    if (a.planned && (allgather ? a.allgather : a.allreduce)) names.push_back(a.name);
  return names;
}

std::string denseAlgorithmChoices() {
  std::string choices = "auto";
  for (const DenseAlgorithmInfo& a : denseAlgorithms()) choices += std::string("|") + a.name;
  return choices;
}

}  // namespace tsr::algorithms
