// dithering: s-level stochastic quantization (kernels/dithering.h: linear or natural levels,
// max or L2 normalization), unbiased: E[decompress(compress(x))] = x.
//
// Payload: f32 scale | u32 0 | count i16 codes (sign * level). Error bound per element:
// scale / s (linear), or the gap between the two natural levels around |x|.
// Random draws are keyed by (seed, step).
#pragma once

#include "algorithms/compress/compressor.h"
#include "algorithms/kernels/dithering.h"

namespace tsr::compress {

class DitheringCompressor final : public Compressor {
 public:
  DitheringCompressor(size_t count, uint32_t levels, kernels::DitherPartition partition,
                      kernels::DitherNormalize normalize, uint64_t seed)
      : Compressor(count), levels_(levels), partition_(partition), normalize_(normalize), seed_(seed) {}
  std::string name() const override;
  size_t maxCompressedBytes() const override;
  Result<size_t> compress(std::span<const float> input, std::span<std::byte> output) override;
  Status decompress(std::span<const std::byte> compressed, std::span<float> output) override;
  uint32_t levels() const { return levels_; }
  kernels::DitherPartition partition() const { return partition_; }
  kernels::DitherNormalize normalize() const { return normalize_; }
  uint64_t seed() const { return seed_; }

 private:
  uint32_t levels_;
  kernels::DitherPartition partition_;
  kernels::DitherNormalize normalize_;
  uint64_t seed_;
};

}  // namespace tsr::compress
