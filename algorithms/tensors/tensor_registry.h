// The tensor algorithms by name: one table of {name, description, parameters} and the one
// function that makes a Tensor (tensor.h) from a name and key/value parameters. The C API's
// tsr_tensor_create is a thin wrapper around makeTensor.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/team/team.h"
#include "algorithms/tensors/tensor.h"

namespace tsr::algorithms {

struct TensorAlgorithmInfo {
  const char* name;         // algorithm=NAME
  const char* description;  // one line, for people
  const char* parameters;   // the keys it takes besides algorithm=, memory= and op=
  // A preset: the algorithm it runs ("" for the four families themselves), the keys that make
  // it what it is ("key=value ..."; a caller's other value for one is refused) and its
  // defaults (the caller's keys override them).
  const char* base = "";
  const char* fixed = "";
  const char* defaults = "";
};

// Every tensor algorithm name: the four families (dense first, the default), then the presets
// (marsit-torus, topk, onebit, ...). The one list tsr-bench's --algo, the C API, Python's hooks
// and tsr-info take their tensor algorithm names from.
const std::vector<TensorAlgorithmInfo>& tensorAlgorithms();
// The row named `name`, or null.
const TensorAlgorithmInfo* findTensorAlgorithm(const std::string& name);
// The family a name runs (a preset's base, else the name itself); empty for an unknown name.
std::string tensorFamily(const std::string& name);

struct TensorSpec {
  std::string name;  // unique among the team's live tensors (the caller checks)
  size_t count = 0;
  DataType dtype = DataType::kF32;
  // algorithm= (default dense) and that algorithm's keys; memory=host|cuda (where the data
  // lives; cuda: device pointers) and op=avg|sum (what a step leaves; default each
  // algorithm's own: the sum for SparDL, the average for the others).
  std::map<std::string, std::string> params;
};

// The tensor `spec` names, on `team`. Errors name the tensor and the key or value at fault,
// prefixed with `caller` (say "tsr_tensor_create"): an unknown algorithm, memory or op, a key
// the algorithm does not take, a dtype it does not take (the compressed algorithms take
// float32 only; dense any floating type), memory=cuda without a usable device or with dense.
Result<std::unique_ptr<Tensor>> makeTensor(Team& team, TensorSpec spec, const std::string& caller);

}  // namespace tsr::algorithms
