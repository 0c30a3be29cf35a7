// none / fp16 / bf16: element-wise casts (BytePS compression's "mild" intra-node compression).
//
// Payload: count elements of the target type (f32 for none, IEEE binary16 for fp16, bfloat16
// for bf16), round to nearest even. Error bound per element: 0 (none), |x| * 2^-11 for normal
// values (fp16; values beyond 65504 become Inf, so fp16 can overflow: prefer bf16 for wide
// ranges), |x| * 2^-8 (bf16).
#pragma once

#include "algorithms/compress/compressor.h"

namespace tsr::compress {

class CastCompressor final : public Compressor {
 public:
  enum class Kind { kNone, kF16, kBf16 };
  CastCompressor(size_t count, Kind kind) : Compressor(count), kind_(kind) {}
  std::string name() const override;
  size_t maxCompressedBytes() const override;
  Result<size_t> compress(std::span<const float> input, std::span<std::byte> output) override;
  // A NaN or Inf, or (fp16, bf16) a finite value that rounds to Inf in the cast: |x| >= 65520
  // for f16, >= the float with bits 0x7F7F8000 (about 3.3962e38) for bf16.
  size_t firstUnencodable(std::span<const float> input) override;
  // The refusal of a finite value the cast makes Inf (shared with the device codec's words).
  static Status beyondFormat(const std::string& name, Kind kind, float value, size_t index);
  Status decompress(std::span<const std::byte> compressed, std::span<float> output) override;
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

}  // namespace tsr::compress
