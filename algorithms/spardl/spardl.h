// A SparDL tensor (docs/references.md): sparse-block allreduce for any number of workers, with global
// residual collection. Each step the rank adds its residual to the gradient, splits it into
// blocks (N, or N/T with T teams), keeps k_b = ceil(density * block size) entries per block
// (exact top-k by magnitude, ties to the lower index) and runs Spar-Reduce-Scatter, then (teams)
// R-SAG or B-SAG across teams, then a Bruck all-gather (spardl_step.h). Every rank ends with the same
// sparse sum; everything any selection dropped stays in the residual of the rank that dropped
// it, so sum(new residuals) + result = sum(gradients + old residuals).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "algorithms/team/result_scale.h"
#include "algorithms/team/team.h"

namespace tsr::algorithms {
class DeviceStaging;
struct SettingsAgreement;
}  // namespace tsr::algorithms

namespace tsr::spardl {

enum class Sag { kAuto, kR, kB };

struct Params {
  double density = 0.01;
  int teams = 1;
  Sag sag = Sag::kAuto;
};

// Keys: algorithm=spardl, density (0 < d <= 1), teams (divides N), sag=auto|r|b (auto: R-SAG
// for a power-of-two team count, else B-SAG). Errors name the key, the value and what is
// accepted; `size` is N.
Result<Params> parseParams(const std::map<std::string, std::string>& kv, int size);

// Where this rank's last step went (microseconds) and what it produced.
struct StepStats {
  double select = 0;  // top-k selections (local, in-procedure, end)
  double merge = 0;   // decoding and adding received blocks
  double local = 0;   // g + residual, NaN scan, clearing, writing the result out
  double wire = 0;    // the rest of the step: waiting for the network
  double total = 0;
  uint64_t resultNonZeros = 0;
};

struct SparDLState;

class SparDLTensor {
 public:
  static Result<std::unique_ptr<SparDLTensor>> create(algorithms::Team& comm, std::string name, size_t count,
                                                      const std::map<std::string, std::string>& params);
  ~SparDLTensor();
  // Collective: replaces g (count floats) by the global sparse sum.
  Status allreduce(float* g);
  // Non-blocking: g untouched until done; one step at a time.
  Result<algorithms::RequestPtr> allreduceAsync(float* g);
  // Device buffers (memory=cuda): later steps take device pointers and run through `staging`
  // (algorithms/team/device_staging.h); null returns to host buffers. Not while a step is pending.
  Status setStaging(std::shared_ptr<algorithms::DeviceStaging> staging);
  bool busy() const;
  uint64_t step() const;
  const std::string& algorithm() const;  // "spardl", "spardl-rsag T=2", "spardl-bsag T=3"
  // B-SAG: the pre-selection size k' the window rule chose for the next step, and the distinct
  // entries the last cross phase produced (0 without B-SAG).
  size_t preselection() const;
  uint64_t lastCrossCount() const;
  const StepStats& lastStats() const;
  // What this rank keeps for its next step (count floats). Valid while no step is pending.
  const std::vector<float>& residual() const;
  // Replaces it (count floats), e.g. permuted after the caller re-laid-out its buffer. Not while
  // a step is pending.
  Status setResidual(const float* values);
  // op= the caller declared, when it is the average (algorithms/team/result_scale.h).
  Status setResultScale(algorithms::ResultScale scale);
  // What every rank's tensor must share, as "key=value; ..." (first_step_agreement.h).
  std::string settingsText() const;
  // Compares the tensor's settings across the ranks before its first step (null: no check).
  void setAgreement(std::shared_ptr<algorithms::SettingsAgreement> agreement);

 private:
  SparDLTensor(algorithms::Team& comm, std::shared_ptr<SparDLState> state);
  algorithms::Team& comm_;
  std::shared_ptr<SparDLState> state_;
};

}  // namespace tsr::spardl
