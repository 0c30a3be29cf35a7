// onebit: signSGD compression (BytePS compression's "onebit"), one bit per element.
//
// Payload: f32 scale | u32 0 | ceil(count/64) u64 sign words (kernels/sign_ops.h layout and
// sign rule: bit = x > 0, exact zeros get a fair Philox coin keyed by (seed, step)).
// Decompressed value: scale * (2 bit - 1), where scale = mean |x| with scaling=true, else 1.
// Error bound: |out - x| <= |x| + scale; the sign is exact for every nonzero x.
#pragma once

#include "algorithms/compress/compressor.h"

namespace tsr::compress {

class OnebitCompressor final : public Compressor {
 public:
  OnebitCompressor(size_t count, bool scaling, uint64_t seed) : Compressor(count), scaling_(scaling), seed_(seed) {}
  std::string name() const override;
  size_t maxCompressedBytes() const override;
  Result<size_t> compress(std::span<const float> input, std::span<std::byte> output) override;
  Status decompress(std::span<const std::byte> compressed, std::span<float> output) override;
  bool scaling() const { return scaling_; }
  uint64_t seed() const { return seed_; }

 private:
  bool scaling_;
  uint64_t seed_;
};

}  // namespace tsr::compress
