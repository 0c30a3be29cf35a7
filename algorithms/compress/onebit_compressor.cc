#include "algorithms/compress/onebit_compressor.h"

#include <cstring>

#include "algorithms/kernels/sign.h"
#include "algorithms/kernels/sign_ops.h"

namespace tsr::compress {

constexpr size_t kHeader = 8;

std::string OnebitCompressor::name() const {
  return std::string("onebit(scaling=") + (scaling_ ? "true" : "false") + ")";
}

size_t OnebitCompressor::maxCompressedBytes() const {
  return kHeader + kernels::wordsForElements(count()) * sizeof(uint64_t);
}

Result<size_t> OnebitCompressor::compress(std::span<const float> input, std::span<std::byte> output) {
  TSR_RETURN_IF_ERROR(checkCompressArgs(input, output));
  float scale = 1.0f;
  if (scaling_ && count() > 0)
    scale = static_cast<float>(kernels::sumAbs(input.data(), count()) / static_cast<double>(count()));
  uint64_t* words = payloadAs<uint64_t>(output.data() + kHeader);
  size_t bad = kernels::signPack(input.data(), count(), words, kernels::RngStream{seed_, 0, step()}, 0);
  if (bad != count()) return checkFinite(input, name());
  uint32_t zero = 0;
  std::memcpy(output.data(), &scale, 4);
  std::memcpy(output.data() + 4, &zero, 4);
  advanceStep();
  return maxCompressedBytes();
}

Status OnebitCompressor::decompress(std::span<const std::byte> compressed, std::span<float> output) {
  TSR_RETURN_IF_ERROR(checkDecompressArgs(compressed, output));
  if (compressed.size() != maxCompressedBytes())
    return Status(Code::kInvalidArgument, name() + ": payload of " + std::to_string(compressed.size()) +
                                              " bytes, expected " + std::to_string(maxCompressedBytes()));
  float scale;
  std::memcpy(&scale, compressed.data(), 4);
  kernels::signDecompress(payloadAs<uint64_t>(compressed.data() + kHeader), count(), scale, output.data());
  return Status::ok();
}

}  // namespace tsr::compress
