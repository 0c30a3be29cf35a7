// randomk: keep k elements chosen uniformly at random; the choice depends only on (seed, step),
// so every rank with the same seed and step keeps the same indices and the value arrays of
// several ranks can be summed without indices (kernels/randomk.h).
//
// Payload: u32 step | u32 k | k f32 values (in increasing index order). decompress regenerates
// the indices from (seed, step in the payload). Values are not rescaled by count/k (BytePS
// convention; pair it with ef=vanilla). Error: exactly the dropped elements.
// decompress uses internal scratch: one call at a time per instance.
#pragma once

#include <vector>

#include "algorithms/compress/compressor.h"

namespace tsr::compress {

class RandomkCompressor final : public Compressor {
 public:
  RandomkCompressor(size_t count, size_t k, uint64_t seed);
  std::string name() const override;
  size_t maxCompressedBytes() const override;
  Result<size_t> compress(std::span<const float> input, std::span<std::byte> output) override;
  Status decompress(std::span<const std::byte> compressed, std::span<float> output) override;

  // The indices compress uses at `step` (increasing).
  std::span<const uint32_t> indicesFor(uint32_t step);
  size_t k() const { return k_; }
  uint64_t seed() const { return seed_; }

 private:
  size_t k_;
  uint64_t seed_;
  std::vector<uint64_t> bitmap_;
  std::vector<uint32_t> indices_;
};

}  // namespace tsr::compress
