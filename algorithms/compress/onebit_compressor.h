// onebit: signSGD compression (BytePS compression's "onebit"), one bit per element.
//
// Payload: f32 scale[B] | zero padding to 8 bytes | ceil(count/64) u64 sign words
// (kernels/sign_ops.h layout and sign rule: bit = x > 0, exact zeros get a fair Philox coin
// keyed by (seed, step)). B = 1 without scale blocks (f32 scale | u32 0 | words), else
// ceil(count / scaleBlock).
// Decompressed value: scale_b * (2 bit - 1) in block b, where scale_b = mean |x| over the
// block with scaling=true, else 1.
// Why blocks: one scale for a bucket whose layers differ in gradient scale gives every element
// the same magnitude; a scale per 4096 elements keeps each layer's own (the fix Marsit needed
// under momentum, docs/convergence.md), for 1/4096 of a float per element.
// Error bound: |out - x| <= |x| + scale_b; the sign is exact for every nonzero x.
#pragma once

#include "algorithms/compress/compressor.h"

namespace tsr::compress {

class OnebitCompressor final : public Compressor {
 public:
  // scaleBlock: 0 (one scale) or a multiple of 64 (blocks start on sign words); ignored
  // without scaling.
  OnebitCompressor(size_t count, bool scaling, uint64_t seed, size_t scaleBlock = 0)
      : Compressor(count), scaling_(scaling), seed_(seed), scaleBlock_(scaling ? scaleBlock : 0) {}
  std::string name() const override;
  size_t maxCompressedBytes() const override;
  Result<size_t> compress(std::span<const float> input, std::span<std::byte> output) override;
  Status decompress(std::span<const std::byte> compressed, std::span<float> output) override;
  bool scaling() const { return scaling_; }
  uint64_t seed() const { return seed_; }
  size_t scaleBlock() const { return scaleBlock_; }
  // Scales in the payload, and the bytes before the sign words (a multiple of 8).
  size_t scaleCount() const;
  size_t headerBytes() const { return (scaleCount() * sizeof(float) + 7) / 8 * 8; }
  // Block b's first element and length (the whole tensor when there are no blocks).
  size_t blockBegin(size_t b) const { return b * scaleBlock_; }
  size_t blockLength(size_t b) const;

 private:
  bool scaling_;
  uint64_t seed_;
  size_t scaleBlock_;
};

}  // namespace tsr::compress
