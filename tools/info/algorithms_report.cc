// tsr-info's algorithm section: the dense table (TSR_ALGO) and the tensor registry
// (tsr_tensor_create's algorithm=, tsr-bench's --algo, Python's hooks), printed from the same
// tables the runtime reads.
#include <algorithm>
#include <string>

#include "algorithms/dense/dense_algorithms.h"
#include "algorithms/tensors/tensor_registry.h"
#include "tools/info/info.h"

namespace tsr::tools::info {

namespace {

std::string padded(std::string s, size_t width) {
  s.resize(std::max(s.size() + 2, width), ' ');
  return s;
}

}  // namespace

std::string renderAlgorithms() {
  std::string s = "Dense algorithms (TSR_ALGO=NAME, tsr-bench --algo NAME; auto = the cost model's choice):\n";
  for (const algorithms::DenseAlgorithmInfo& a : algorithms::denseAlgorithms()) {
    std::string serves = a.allreduce && a.allgather ? "allreduce, allgather" : a.allreduce ? "allreduce" : "allgather";
    s += "  " + padded(a.name, 14) + padded(serves, 22) + a.description + "\n";
  }
  s += "Tensor algorithms (tsr_tensor_create algorithm=NAME, tessera.torch.hooks; tsr-bench --algo NAME but dense, "
       "which is TSR_ALGO's, and compressed, which needs its keys):\n";
  for (const algorithms::TensorAlgorithmInfo& a : algorithms::tensorAlgorithms()) {
    s += "  " + padded(a.name, 20) + a.description + "\n";
    if (*a.base)  // a preset: what it runs; its keys are its family's
      s += "      = algorithm=" + std::string(a.base) + " " + a.fixed +
           (*a.defaults ? std::string(", default ") + a.defaults : std::string()) + "\n";
    else if (*a.parameters)
      s += "      keys: " + std::string(a.parameters) + "\n";
  }
  return s;
}

}  // namespace tsr::tools::info
