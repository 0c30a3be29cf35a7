#include "algorithms/compress/onebit_compressor.h"

#include <algorithm>
#include <cstring>

#include "algorithms/kernels/sign.h"
#include "algorithms/kernels/sign_ops.h"

namespace tsr::compress {

std::string OnebitCompressor::name() const {
  std::string out = std::string("onebit(scaling=") + (scaling_ ? "true" : "false");
  if (scaleBlock_) out += ", scale_block=" + std::to_string(scaleBlock_);
  return out + ")";
}

size_t OnebitCompressor::scaleCount() const {
  if (!scaleBlock_ || count() == 0) return 1;
  return (count() + scaleBlock_ - 1) / scaleBlock_;
}

size_t OnebitCompressor::blockLength(size_t b) const {
  if (!scaleBlock_) return count();
  return std::min(scaleBlock_, count() - blockBegin(b));
}

size_t OnebitCompressor::maxCompressedBytes() const {
  return headerBytes() + kernels::wordsForElements(count()) * sizeof(uint64_t);
}

Result<size_t> OnebitCompressor::compress(std::span<const float> input, std::span<std::byte> output) {
  TSR_RETURN_IF_ERROR(checkCompressArgs(input, output));
  uint64_t* words = payloadAs<uint64_t>(output.data() + headerBytes());
  size_t bad = kernels::signPack(input.data(), count(), words, kernels::RngStream{seed_, 0, step()}, 0);
  if (bad != count()) return checkFinite(input, name());
  std::memset(output.data(), 0, headerBytes());
  for (size_t b = 0; b < scaleCount(); ++b) {
    float scale = 1.0f;
    if (scaling_ && count() > 0)
      scale = static_cast<float>(kernels::sumAbs(input.data() + blockBegin(b), blockLength(b)) /
                                 static_cast<double>(blockLength(b)));
    std::memcpy(output.data() + b * sizeof(float), &scale, sizeof scale);
  }
  advanceStep();
  return maxCompressedBytes();
}

Status OnebitCompressor::decompress(std::span<const std::byte> compressed, std::span<float> output) {
  TSR_RETURN_IF_ERROR(checkDecompressArgs(compressed, output));
  if (compressed.size() != maxCompressedBytes())
    return Status(Code::kInvalidArgument, name() + ": payload of " + std::to_string(compressed.size()) +
                                              " bytes, expected " + std::to_string(maxCompressedBytes()));
  const uint64_t* words = payloadAs<uint64_t>(compressed.data() + headerBytes());
  for (size_t b = 0; b < scaleCount(); ++b) {
    float scale;
    std::memcpy(&scale, compressed.data() + b * sizeof(float), sizeof scale);
    kernels::signDecompress(words + blockBegin(b) / 64, blockLength(b), scale, output.data() + blockBegin(b));
  }
  return Status::ok();
}

}  // namespace tsr::compress
