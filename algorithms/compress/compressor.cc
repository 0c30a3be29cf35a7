#include "algorithms/compress/compressor.h"

#include <cmath>
#include <cstdint>

#include "algorithms/kernels/sign.h"

namespace tsr::compress {

Status checkFinite(std::span<const float> input, const std::string& who) {
  size_t bad = kernels::firstNonFinite(input.data(), input.size());
  if (bad == input.size()) return Status::ok();
  float v = input[bad];
  return Status(Code::kNumericError, who + ": non-finite input value " +
                                         (std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf")) + " at index " +
                                         std::to_string(bad) + " of " + std::to_string(input.size()));
}

size_t Compressor::firstUnencodable(std::span<const float> input) {
  return kernels::firstNonFinite(input.data(), input.size());
}

Status Compressor::checkCompressArgs(std::span<const float> input, std::span<std::byte> output) const {
  if (input.size() != count_)
    return Status(Code::kInvalidArgument, name() + ": compress got " + std::to_string(input.size()) +
                                              " elements, built for " + std::to_string(count_));
  if (output.size() < maxCompressedBytes())
    return Status(Code::kInvalidArgument, name() + ": output buffer of " + std::to_string(output.size()) +
                                              " bytes, needs " + std::to_string(maxCompressedBytes()));
  if (reinterpret_cast<uintptr_t>(output.data()) % 8 != 0)
    return Status(Code::kInvalidArgument, name() + ": output buffer is not 8-byte aligned");
  return Status::ok();
}

Status Compressor::checkDecompressArgs(std::span<const std::byte> compressed, std::span<float> output) const {
  if (output.size() != count_)
    return Status(Code::kInvalidArgument, name() + ": decompress into " + std::to_string(output.size()) +
                                              " elements, built for " + std::to_string(count_));
  if (reinterpret_cast<uintptr_t>(compressed.data()) % 8 != 0)
    return Status(Code::kInvalidArgument, name() + ": compressed buffer is not 8-byte aligned");
  return Status::ok();
}

}  // namespace tsr::compress
