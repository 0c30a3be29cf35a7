// A tensor reduced through any compressor of the registry (the BytePS compression framework, no server):
// each step every rank compresses its gradient (with error feedback on by default, so what
// the compressor drops comes back next step), the ranks all-gather the payloads, and each
// decompresses all N and averages them. The result is the same on every rank.
//
// Parameters: the compressor keys of algorithms/compress/registry.h (compressor=... required,
// k, scaling, scale_block, ef=vanilla|none (default vanilla here), momentum, momentum_mu, seed),
// completed from TSR_COMPRESS_* variables, plus algorithm=compressed. randomk draws the same
// indices on every rank (shared seed, equal steps). optimizer_momentum=mu (default 0, flat
// schedule only) hands the momentum off to the optimizer (compressed_step.h).
//
// intra=none|fp16 selects the two-level schedule on the communicator's host grid
// (compressed_hier.h): average inside each host (f32, or f16 with the cast error kept), the
// compressor across hosts on this rank's row block (the shard: its own compressor and error
// feedback; a topk/randomk k given as a count is split among the shards), then an all-gather
// inside the host. A job without a host grid (unequal hosts) fails with TSR_ERR_NOT_SUPPORTED.
//
// A NaN or Inf on any rank fails the step on every rank with TSR_ERR_NUMERIC naming the
// tensor (a one-flag allreduce runs before compressing, so no compressor state changes).
//
// Device tensors (memory=cuda, useDeviceMemory): a tensor whose compressor has a device form
// runs its whole step on the device when the transport moves CUDA memory (flat:
// compressed_device.h; two-level: compressed_hier_device.h); otherwise it stages
// (algorithms/team/device_staging.h). Both are tested with a fake device; on a GPU: docs/gpu.md.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "algorithms/team/result_scale.h"
#include "algorithms/team/team.h"

namespace tsr::algorithms {
class DeviceStaging;
struct DeviceOpeners;
class StepKernels;
struct SettingsAgreement;
}  // namespace tsr::algorithms

namespace tsr::compressed {

struct CompressedState;

class CompressedTensor {
 public:
  static Result<std::unique_ptr<CompressedTensor>> create(algorithms::Team& comm, std::string name, size_t count,
                                                          const std::map<std::string, std::string>& params);
  ~CompressedTensor();
  // Collective: replaces g (count floats) by the average of every rank's decompressed payload.
  Status allreduce(float* g);
  // Non-blocking: g untouched until the request is done; one step at a time.
  Result<algorithms::RequestPtr> allreduceAsync(float* g);
  // Device buffers (memory=cuda): later steps take device pointers and run through `staging`
  // (algorithms/team/device_staging.h); null returns to host buffers. Not while a step is pending.
  Status setStaging(std::shared_ptr<algorithms::DeviceStaging> staging);
  // The direct device path (compressed_device.h, compressed_hier_device.h): later
  // steps take pointers into the kernels' memory and run there, compressor state included.
  // Tensors whose compressor has a device form only (device_codec.h); before the first step.
  Status setDeviceKernels(std::shared_ptr<algorithms::StepKernels> kernels);
  // A memory=cuda tensor: the direct path when the transport moves CUDA memory and the tensor
  // has a device step, else staging; opens what that path needs through `open`. Returns the
  // log line saying which path and why (algorithms/team/device_path.h).
  Result<std::string> useDeviceMemory(const algorithms::DeviceOpeners& open);
  bool directDevice() const;
  bool busy() const;
  uint64_t step() const;
  // "compressed:<compressor name>", e.g. "compressed:ef(topk(k=10))"; two-level
  // "compressed-2level:" or "compressed-2level-fp16:" and the compressor of the first shard.
  const std::string& algorithm() const;
  // What this rank keeps back, count floats, in units of its own contribution, so that
  // N * result + sum over ranks of residual = sum over ranks of (g + previous residual).
  // Flat: the error-feedback error (zeros when ef=none; read from the device on the direct
  // path); two-level: the f16 cast residual plus
  // X (ranks per host) times the shard's error-feedback error, at the shard.
  void residual(float* out) const;
  // Replaces what this rank keeps back (count floats, residual()'s units), e.g. permuted after
  // the caller re-laid-out its buffer. Flat: the error-feedback error (ef=none keeps none: only
  // zeros are accepted). Two-level: the f16 cast residual takes it all (the next step adds it
  // to g, intra=none too, once) and the shard's error restarts at zero. Not while a step is
  // pending, nor on the direct device path.
  Status setResidual(const float* values);
  // op= the caller declared, when it is the sum (algorithms/team/result_scale.h).
  Status setResultScale(algorithms::ResultScale scale);
  // Flat with momentum=nesterov: the momentum (count floats; read from the device on the
  // direct path); zeros otherwise.
  void momentum(float* out) const;
  // Bytes of one rank's payload slot on the wire (the all-gather block).
  size_t slotBytes() const;
  // What every rank's tensor must share, as "key=value; ..." (first_step_agreement.h).
  std::string settingsText() const;
  // Compares the tensor's settings across the ranks before its first step (null: no check).
  void setAgreement(std::shared_ptr<algorithms::SettingsAgreement> agreement);

 private:
  CompressedTensor(algorithms::Team& comm, std::shared_ptr<CompressedState> state);
  algorithms::Team& comm_;
  std::shared_ptr<CompressedState> state_;
};

}  // namespace tsr::compressed
