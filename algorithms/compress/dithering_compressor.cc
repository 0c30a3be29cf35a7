#include "algorithms/compress/dithering_compressor.h"

#include <cstring>

namespace tsr::compress {

constexpr size_t kHeader = 8;

std::string DitheringCompressor::name() const {
  return "dithering(k=" + std::to_string(levels_) +
         ", partition=" + (partition_ == kernels::DitherPartition::kLinear ? "linear" : "natural") +
         ", normalize=" + (normalize_ == kernels::DitherNormalize::kMax ? "max" : "l2") + ")";
}

size_t DitheringCompressor::maxCompressedBytes() const { return kHeader + 2 * count(); }

Result<size_t> DitheringCompressor::compress(std::span<const float> input, std::span<std::byte> output) {
  TSR_RETURN_IF_ERROR(checkCompressArgs(input, output));
  TSR_RETURN_IF_ERROR(checkFinite(input, name()));
  float scale = kernels::ditherScale(input.data(), count(), normalize_);
  kernels::ditherQuantize(input.data(), count(), scale, levels_, partition_, kernels::RngStream{seed_, 0, step()},
                          payloadAs<int16_t>(output.data() + kHeader));
  uint32_t zero = 0;
  std::memcpy(output.data(), &scale, 4);
  std::memcpy(output.data() + 4, &zero, 4);
  advanceStep();
  return maxCompressedBytes();
}

Status DitheringCompressor::decompress(std::span<const std::byte> compressed, std::span<float> output) {
  TSR_RETURN_IF_ERROR(checkDecompressArgs(compressed, output));
  if (compressed.size() != maxCompressedBytes())
    return Status(Code::kInvalidArgument, name() + ": payload of " + std::to_string(compressed.size()) +
                                              " bytes, expected " + std::to_string(maxCompressedBytes()));
  float scale;
  std::memcpy(&scale, compressed.data(), 4);
  kernels::ditherDequantize(payloadAs<int16_t>(compressed.data() + kHeader), count(), scale, levels_, partition_,
                            output.data());
  return Status::ok();
}

}  // namespace tsr::compress
