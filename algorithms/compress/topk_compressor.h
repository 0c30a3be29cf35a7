// topk: keep the k largest-magnitude elements (exact, ties to the lower index; kernels/topk.h).
//
// Payload: u32 k | u32 0 | k u32 indices (increasing) | k f32 values. Decompressed: the selected
// values at their indices, 0 elsewhere. Error: exactly the dropped elements.
#pragma once

#include <vector>

#include "algorithms/compress/compressor.h"

namespace tsr::compress {

class TopkCompressor final : public Compressor {
 public:
  TopkCompressor(size_t count, size_t k);
  std::string name() const override;
  size_t maxCompressedBytes() const override;
  Result<size_t> compress(std::span<const float> input, std::span<std::byte> output) override;
  Status decompress(std::span<const std::byte> compressed, std::span<float> output) override;
  size_t k() const { return k_; }

 private:
  size_t k_;
  std::vector<uint32_t> scratch_;
};

}  // namespace tsr::compress
