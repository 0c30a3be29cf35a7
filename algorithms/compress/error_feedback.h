// ErrorFeedback (ef=vanilla): a decorator that makes any compressor's error reappear later
// instead of being lost (BytePS compression; Karimireddy et al. 2019).
//
//   corrected = g + e                      (e starts at 0)
//   payload   = inner.compress(corrected)
//   e         = corrected - inner.decompress(payload)
//
// decompress forwards to the inner compressor. encode leaves e alone; commit updates it (a step
// that fails after compressing changes nothing). Buffers (e and one scratch tensor) are allocated
// once at construction. A non-finite input fails before e changes.
#pragma once

#include <memory>
#include <vector>

#include "algorithms/compress/compressor.h"

namespace tsr::compress {

class ErrorFeedback final : public Compressor {
 public:
  explicit ErrorFeedback(std::unique_ptr<Compressor> inner);
  std::string name() const override;
  size_t maxCompressedBytes() const override { return inner_->maxCompressedBytes(); }
  Result<size_t> compress(std::span<const float> input, std::span<std::byte> output) override;
  // corrected = g + e, payload = inner.encode(corrected); e waits for commit.
  Result<size_t> encode(std::span<const float> input, std::span<std::byte> output) override;
  // e = corrected - inner.decompress(payload): the payload encode wrote, decoded again.
  Status commit() override;
  // What the inner compressor would refuse of g + e (computed in the scratch tensor; e stays).
  size_t firstUnencodable(std::span<const float> input) override;
  Status decompress(std::span<const std::byte> compressed, std::span<float> output) override {
    return inner_->decompress(compressed, output);
  }
  void setStep(uint32_t step) override;
  const Compressor& inner() const { return *inner_; }

  std::span<const float> error() const { return error_; }
  std::span<const float> feedbackError() const override { return error_; }
  bool setFeedbackError(std::span<const float> error) override;
  void resetError();

 private:
  std::unique_ptr<Compressor> inner_;
  std::vector<float> error_;
  std::vector<float> corrected_;
  std::span<const std::byte> encoded_;  // encode's payload, until commit
  bool pending_ = false;                // an encode not yet committed
};

}  // namespace tsr::compress
