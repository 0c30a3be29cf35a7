// A Marsit tensor (seed 002): per-tensor state (compensation vector, step counter) and its
// allreduce over a communicator. Each step:
//   g' = g + c                       (c: compensation, zero at start)
//   eta = mean over ranks of mean|g'| (one scalar allreduce: the shared magnitude)
//   bits = signs of g'               (a fair coin for exact zeros)
//   bits = Marsit ring (marsit_plan.h): one bit per element per hop, merged hop by hop
//   G = eta * (2 bit - 1)            (the same on every rank, bit for bit)
//   c = g' - G                       (what the sign discarded, kept for the next step)
// and g is replaced by G. Every `full_precision_every` steps (0 = never) the step is instead a
// full-precision averaging allreduce of g', and c is reset. A NaN or Inf in g' fails the step
// with TSR_ERR_NUMERIC naming the tensor and the element (the state is left unchanged).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/communicator.h"

namespace tsr::marsit {

struct Params {
  uint64_t seed = 0x5eed;
  int fullPrecisionEvery = 0;
};

// Keys: seed, full_precision_every, algorithm=marsit, topology=ring (torus: not yet). Errors
// name the key, the value and what is accepted.
Result<Params> parseParams(const std::map<std::string, std::string>& kv);

class MarsitTensor {
 public:
  static Result<std::unique_ptr<MarsitTensor>> create(runtime::Communicator& comm, std::string name,
                                                      size_t count,
                                                      const std::map<std::string, std::string>& params);
  // Collective: replaces g (count floats) by the step's global estimate.
  Status allreduce(float* g);

  const std::vector<float>& compensation() const { return comp_; }
  uint64_t step() const { return step_; }
  const std::string& name() const { return name_; }

 private:
  MarsitTensor(runtime::Communicator& comm, std::string name, size_t count, Params p);
  runtime::Communicator& comm_;
  std::string name_;
  size_t count_;
  Params params_;
  std::vector<float> comp_, work_;
  std::vector<uint64_t> bits_;
  std::shared_ptr<algorithms::Plan> plan_;
  uint64_t step_ = 0;
};

}  // namespace tsr::marsit
