// NesterovMomentum (momentum=nesterov): a decorator applying Nesterov momentum before the wrapped
// compressor, as BytePS does (BytePS compression: momentum must come before compression for
// dist-EF-SGDM; disable the framework's own momentum when using it).
//
//   m  = mu * m + g          (m starts at 0)
//   g' = g + mu * m
//   payload = inner.compress(g')
//
// decompress forwards to the inner compressor. encode leaves m alone; commit updates it (a step
// that fails after compressing changes nothing). A non-finite input fails before m changes.
#pragma once

#include <memory>
#include <vector>

#include "algorithms/compress/compressor.h"

namespace tsr::compress {

class NesterovMomentum final : public Compressor {
 public:
  NesterovMomentum(std::unique_ptr<Compressor> inner, float mu);
  std::string name() const override;
  size_t maxCompressedBytes() const override { return inner_->maxCompressedBytes(); }
  Result<size_t> compress(std::span<const float> input, std::span<std::byte> output) override;
  // payload = inner.encode(g + mu m); the next m is computed into the scratch tensor, and
  // commit makes it m (a swap).
  Result<size_t> encode(std::span<const float> input, std::span<std::byte> output) override;
  Status commit() override;
  // What the inner compressor would refuse of g + mu m (computed in the scratch tensor; m stays).
  size_t firstUnencodable(std::span<const float> input) override;
  Status decompress(std::span<const std::byte> compressed, std::span<float> output) override {
    return inner_->decompress(compressed, output);
  }
  void setStep(uint32_t step) override;
  const Compressor& inner() const { return *inner_; }
  std::span<const float> feedbackError() const override { return inner_->feedbackError(); }
  bool setFeedbackError(std::span<const float> error) override { return inner_->setFeedbackError(error); }

  std::span<const float> momentum() const { return momentum_; }
  float mu() const { return mu_; }

 private:
  std::unique_ptr<Compressor> inner_;
  float mu_;
  std::vector<float> momentum_;
  std::vector<float> shifted_;  // g + mu m for the inner compressor, then the next m until commit
  bool encoded_ = false;
};

}  // namespace tsr::compress
