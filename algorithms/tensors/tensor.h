// Tensor: one gradient buffer's allreduce, the same interface whatever the algorithm (dense,
// Marsit, compressed, SparDL). Made by name from the registry (tensor_registry.h); every rank
// steps its tensors in the same order. The C API's tsr_tensor_t (and Python and PyTorch
// above it) is a handle to one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "algorithms/team/request.h"
#include "base/dtype.h"
#include "base/status.h"

namespace tsr::algorithms {

// One measured part of a step, for tools (tsr-bench's split): a time in microseconds, or a
// count ("result_nonzeros").
struct StepPart {
  std::string name;
  double value = 0;
};

class Tensor {
 public:
  virtual ~Tensor() = default;
  // The algorithm as it runs ("dense", "marsit-ring", "spardl-rsag T=2", ...).
  virtual const std::string& algorithm() const = 0;
  // What a step leaves in the data: the sum or the average over ranks (op=).
  virtual ReduceOp result() const = 0;
  // One step on `data` (count elements of the tensor's dtype, in the tensor's memory), in
  // place; the request finishes when the result is there.
  virtual Result<RequestPtr> allreduceAsync(void* data) = 0;
  // Steps finished without error.
  virtual uint64_t steps() const = 0;
  // Whether a step is pending (the residual may then not be read or set).
  virtual bool busy() const = 0;
  // What compression has held back so far, count floats (zeros for a dense tensor).
  virtual void residual(float* out) const = 0;
  // Restores it (a checkpoint); a dense tensor takes only zeros.
  virtual Status setResidual(const float* values) = 0;
  // The last finished step's parts in the algorithm's own words (Marsit: prepare, pack, wire,
  // merge, decompress, compensate, total; SparDL: select, merge, local, wire, total,
  // result_nonzeros); empty where the algorithm does not time its steps (dense, compressed).
  virtual std::vector<StepPart> lastStep() const { return {}; }
  // Numbers the algorithm resolved (defaults included) that a tool checking results needs:
  // Marsit's momentum (the mu handed to the optimizer) and scale_span (elements sharing one
  // eta). Empty for the others.
  virtual std::map<std::string, double> settings() const { return {}; }
};

}  // namespace tsr::algorithms
