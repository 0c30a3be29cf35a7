// A Marsit tensor (Sign Bit is Enough): per-tensor state (compensation vector, step counter) and its
// allreduce over a communicator. Each step:
//   g' = g + c + mu M                (c: compensation; M: the last step's estimate; both 0 at start)
//   eta_b = mean over ranks of mean|g'| over scale block b (one allreduce of the block means)
//   bits = signs of g'               (a fair coin for exact zeros)
//   bits = Marsit ring or torus (marsit_plan.h): one bit per element per hop, merged hop by hop
//   M' = eta_b * (2 bit - 1)         (the same on every rank, bit for bit)
//   c = g' - M'                      (what the sign discarded, kept for the next step)
// and g is replaced by M' - mu M, then M = M'. Every `full_precision_every` steps (0 = never)
// M' is instead a full-precision average of g', and c is reset. A NaN or Inf in g' fails the
// step on every rank with TSR_ERR_NUMERIC naming the tensor (and, on the rank that had it, the
// element); g and the state are then left unchanged.
//
// mu (`momentum`) is the momentum of the optimizer that consumes g: with heavy-ball momentum
// mu that optimizer's buffer then holds M, the sign estimate of the momentum, instead of
// integrating the sign estimate of each gradient (whose errors the buffer compounds: plain
// sign compression diverges under SGD momentum 0.9, docs/compressed.md "Convergence under
// momentum"). mu = 0 is the paper's Algorithm 1 on the gradient. `scale_block` elements share
// one eta (0: one eta for the whole tensor, the paper's global step size), so a bucket that
// holds layers of very different gradient scales is not signed with one magnitude.
//
// A step is one task on the communicator's progress thread (marsit_step.h): the scalar
// allreduce and the bit ring run side by side, so the step costs one ring of bits plus the
// local passes, and allreduceAsync returns at once.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/team/result_scale.h"
#include "algorithms/team/team.h"

namespace tsr::algorithms {
class DeviceStaging;
struct DeviceOpeners;
class StepKernels;
struct SettingsAgreement;
}  // namespace tsr::algorithms

namespace tsr::marsit {

// kTwoLevel: intra-host average (f32 or f16), Marsit across hosts (marsit_hier_step.h).
enum class Topology { kRing, kTorus, kTwoLevel };

struct Params {
  uint64_t seed = 0x5eed;
  int fullPrecisionEvery = 0;
  Topology topology = Topology::kRing;
  DataType intraType = DataType::kF32;  // two-level only
  // Pack the signs chunk by chunk inside the bit plan, each chunk's first send waiting only
  // for it (pack=chunked, the default; two-level: the row block, by column ring chunks);
  // pack=whole packs the whole vector (two-level: the row block) before the plan starts (the
  // earlier schedule, same results bit for bit; for comparisons).
  bool chunkedPack = true;
  // Flat ring and torus; the two-level schedule has neither yet (0 there, others refused).
  float momentum = 0.9f;
  size_t scaleBlock = 4096;  // a multiple of kScaleBlockUnit, or 0 (one eta per tensor)
};

inline constexpr size_t kScaleBlockUnit = 1024;  // kernels::sumAbs's block

// Doubles in a flat (ring or torus) step's scale allreduce for a tensor of `count` elements: one
// mean |g'| per scale block, then the NaN/Inf flag. (Two-level: always 2.)
size_t flatScalarCount(size_t count, size_t scaleBlock);

// Keys: seed, full_precision_every, algorithm=marsit, topology=ring|torus, intra=none|fp16
// (selects the two-level schedule over the job's host grid; not with topology=torus),
// pack=chunked|whole, momentum (0 <= mu < 1, default 0.9), scale_block (0 or a multiple of
// 1024, default 4096). Errors name the key, the value and what is accepted.
Result<Params> parseParams(const std::map<std::string, std::string>& kv);

// Where this rank's last step spent its time (microseconds), for tsr-bench's split.
// The flat ring and torus fuse passes (kernels signPrepare, signFinish): their packing is
// counted in `prepare` and their compensation in `decompress` (pack and compensate are 0).
// With pack=chunked the packing runs inside the bit plan: `prepare` is the sum of the chunks'
// packing and `wire` leaves it out.
struct StepTimes {
  double prepare = 0;     // g + c, NaN/Inf scan, sum |g'| (flat: and the sign packing)
  double pack = 0;        // sign packing (two-level)
  double wire = 0;        // the bit plan from start to end, merges excluded
  double merge = 0;       // bit merges inside the plan
  double decompress = 0;  // G = eta * (2 bit - 1) into g (flat: and c = g' - G)
  double compensate = 0;  // c = g' - G (two-level)
  double total = 0;       // from the task's start to its end
  bool fullPrecision = false;
};

struct MarsitState;

class MarsitTensor {
 public:
  static Result<std::unique_ptr<MarsitTensor>> create(algorithms::Team& comm, std::string name, size_t count,
                                                      const std::map<std::string, std::string>& params);
  ~MarsitTensor();

  // Collective: replaces g (count floats) by the step's global estimate.
  Status allreduce(float* g);
  // Non-blocking form: g must stay untouched until the request is done. One step at a time
  // per tensor (a second call while one is pending is TSR_ERR_INVALID_ARGUMENT).
  Result<algorithms::RequestPtr> allreduceAsync(float* g);

  // Device buffers (memory=cuda): later steps take device pointers and run through `staging`
  // (algorithms/team/device_staging.h); null returns to host buffers. Not while a step is pending.
  Status setStaging(std::shared_ptr<algorithms::DeviceStaging> staging);
  // The direct device path (marsit_device.h): later steps take device pointers and run
  // on `kernels`, compensation included, payloads handed to the transport as CUDA memory.
  // Ring, torus and two-level; before the first step (the compensation starts on the device).
  Status setDeviceKernels(std::shared_ptr<algorithms::StepKernels> kernels);
  // memory=cuda: the direct path when the communicator's transport moves CUDA memory (and the
  // topology has a device step), else staging; opens what that path needs through `open`.
  // Returns the log line saying which path and why (algorithms/team/device_path.h).
  Result<std::string> useDeviceMemory(const algorithms::DeviceOpeners& open);
  bool directDevice() const;
  // True while a step is pending.
  bool busy() const;
  // Valid while no step is pending (direct device path: read back from the device). Flat:
  // count floats. Two-level: the compensation of this
  // rank's row block (shardOffset(), in units of a host average), and intraResidual() what the
  // f16 cast dropped (count floats; zeros for intra=none).
  const std::vector<float>& compensation() const;
  const std::vector<float>& intraResidual() const;
  size_t shardOffset() const;
  // Everything this rank keeps back, in units of its own contribution (count floats): flat,
  // the compensation; two-level, the f16 residual plus X times the row block's compensation.
  // Summed over ranks, it is what the next full-precision step adds to the average.
  void residual(float* out) const;
  // Replaces everything this rank keeps back (count floats, residual()'s units), e.g. permuted
  // after the caller re-laid-out its buffer. Flat: the compensation. Two-level: the f16
  // residual takes it all (the next step adds it to g, intra=none too, once) and the row
  // block's compensation restarts at zero; both reach the row's sum the same way. Not while a
  // step is pending, nor on the direct device path.
  Status setResidual(const float* values);
  // op= the caller declared, when it is the sum (algorithms/team/result_scale.h).
  Status setResultScale(algorithms::ResultScale scale);
  uint64_t step() const;
  // The momentum mu handed to the optimizer (0: the output is the sign estimate itself) and
  // the elements that share one eta (the whole tensor when one eta serves it).
  float momentum() const;
  size_t scaleSpan() const;
  const StepTimes& lastTimes() const;
  const std::string& name() const;
  size_t count() const;
  // "marsit-ring", "marsit-torus" or "marsit-2level".
  const std::string& algorithm() const;
  // What every rank's tensor must share, as "key=value; ..." (first_step_agreement.h).
  std::string settingsText() const;
  // Compares the tensor's settings across the ranks before its first step (null: no check).
  void setAgreement(std::shared_ptr<algorithms::SettingsAgreement> agreement);

 private:
  MarsitTensor(algorithms::Team& comm, std::shared_ptr<MarsitState> state);
  algorithms::Team& comm_;
  std::shared_ptr<MarsitState> state_;
};

}  // namespace tsr::marsit
