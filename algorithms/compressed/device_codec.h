// DeviceCodec: the device form of a registry compressor chain (algorithms/compress), for a
// compressed tensor on the direct device path (compressed_device.h). It reads the chain
// the registry built, [nesterov(] [ef(] inner [)] [)], with the same parameters, so the same
// payload layout and the same maths, and runs it through a StepKernels backend
// (plan/step_kernels.h) on device memory. Its state lives on the device: the error-feedback
// residual e, the momentum m, and their scratch (c = g + e, p = the shifted gradient).
// Payloads and state are bit-identical to the host chain's for the same input and step (the
// decorators share kernels/feedback_ops.h), so a direct rank and a host rank could share a job.
//
// Inner compressors with a device form: all of the registry's (none, fp16, bf16, topk,
// randomk, onebit, dithering with either normalization: the L2 norm's sum of squares runs in
// the CPU's block order, kernels::ditherSumSquares); with or without ef=vanilla and
// momentum=nesterov. Anything else answers noDeviceForm() with why, and the tensor stages
// (algorithms/team/device_path.h). A sparse payload's 8-byte header is written from and
// read into the host (its k and step drive the kernels). As on the host, a stage whose input
// is not finite (g + e or the shifted gradient overflowing) fails naming it, state unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/compress/compressor.h"
#include "algorithms/plan/device_block.h"

namespace tsr::compressed {

class DeviceCodec {
 public:
  // Why `c` has no device form; empty when it has one.
  static std::string noDeviceForm(const compress::Compressor& c);
  // `who` prefixes errors ("compressed tensor w (rank 1, direct device path)").
  static Result<std::unique_ptr<DeviceCodec>> create(std::shared_ptr<algorithms::StepKernels> kernels,
                                                     const compress::Compressor& c, std::string who);

  // g (count floats, device) into payload (device, 8-byte aligned, maxCompressedBytes of the
  // host chain) at `step`; returns the bytes written. g must be finite (the step checks).
  // Changes no state, as compress::Compressor::encode: commit, once the step has ended,
  // updates the residual and momentum from the payload, which must stay as written until then.
  Result<size_t> encode(const float* g, std::byte* payload, uint32_t step);
  Status commit();
  // What compress would refuse of g (count floats, device), asked before the step's flag
  // exchange so every rank fails the step, not this one alone: the index of the first element
  // of g itself when the caller has not scanned it (the momentum hand-off's g + mu M), then of
  // the first element whose shifted value or g + e is not finite, or that the f16/bf16 cast
  // makes Inf, in the host chain's order so both name the same element; count when there is
  // none. Writes only scratch and payload (which compress rewrites).
  Result<size_t> firstUnencodable(const float* g, std::byte* payload, bool gScanned);
  // A payload of `bytes` (device) into out (count floats, device).
  Status decompress(const std::byte* payload, size_t bytes, float* out);
  // Error feedback's residual into host memory (count floats); zeros without ef.
  Status readError(float* host) const;
  // Replaces error feedback's residual with count floats from host memory; false without ef
  // (nothing is kept there).
  Result<bool> writeError(const float* host);
  // The momentum into host memory (count floats); zeros without momentum.
  Status readMomentum(float* host) const;

 private:
  enum class Inner { kNone, kF16, kBf16, kTopk, kRandomk, kOnebit, kDither };
  DeviceCodec(std::shared_ptr<algorithms::StepKernels> k, size_t count, std::string who)
      : kernels_(std::move(k)), count_(count), who_(std::move(who)) {}
  Status named(const Status& st) const;
  Result<size_t> compressInner(const float* x, std::byte* payload, uint32_t step);
  // fp16, bf16: x cast into payload, then back: the first element the cast made Inf (count: none).
  Result<size_t> castAndScan(const float* x, std::byte* payload);
  Status finiteOrNamed(Result<size_t> bad, const float* x, const std::string& stage) const;
  Result<size_t> compressSparse(const float* x, std::byte* payload, uint32_t step);
  Status decompressSparse(const std::byte* payload, size_t bytes, float* out);
  Result<size_t> compressDither(const float* x, std::byte* payload, uint32_t step);
  Status decompressDither(const std::byte* payload, float* out);
  Result<size_t> compressOnebit(const float* x, std::byte* payload, uint32_t step);
  Status decompressOnebit(const std::byte* payload, float* out);

  std::shared_ptr<algorithms::StepKernels> kernels_;
  size_t count_;
  std::string who_;
  Inner inner_ = Inner::kNone;
  std::string innerName_;      // the host compressor's name, for messages
  size_t innerBytes_ = 0;      // its payload size (sparse: the largest)
  size_t k_ = 0;               // topk, randomk: min(k, count)
  uint64_t seed_ = 0;          // randomk, onebit, dithering
  bool scaling_ = false;       // onebit
  size_t scaleBlock_ = 0;      // onebit: elements per scale (0: one scale)
  std::vector<float> scales_;  // onebit: the payload's scales, staged on the host
  std::vector<double> sums_;   // onebit: sum |x| per scale block
  uint32_t levels_ = 0;        // dithering
  kernels::DitherPartition partition_ = kernels::DitherPartition::kLinear;
  bool l2_ = false;                  // dithering: dithering_normalize=l2 (else max |x|)
  algorithms::DeviceBlock indices_;  // randomk: the step's indices
  bool ef_ = false, nesterov_ = false;
  float mu_ = 0;
  std::string efName_;                          // "ef(topk(k=10))", for messages
  algorithms::DeviceBlock error_, corrected_;   // ef: e and c = g + e
  algorithms::DeviceBlock momentum_, shifted_;  // nesterov: m and p (after encode: the next m)
  const std::byte* encoded_ = nullptr;          // encode's payload until commit
  size_t encodedBytes_ = 0;
  algorithms::DeviceBlock castBack_;  // fp16, bf16: the payload cast back, to find an Inf
};

}  // namespace tsr::compressed
