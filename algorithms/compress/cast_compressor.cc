#include "algorithms/compress/cast_compressor.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "algorithms/kernels/cast.h"

namespace tsr::compress {

std::string CastCompressor::name() const {
  switch (kind_) {
    case Kind::kNone:
      return "none";
    case Kind::kF16:
      return "fp16";
    case Kind::kBf16:
      return "bf16";
  }
  return "cast";
}

size_t CastCompressor::maxCompressedBytes() const {
  return count() * (kind_ == Kind::kNone ? sizeof(float) : sizeof(uint16_t));
}

Status CastCompressor::beyondFormat(const std::string& name, Kind kind, float value, size_t index) {
  return Status(Code::kNumericError, name + ": value " + std::to_string(value) + " at index " + std::to_string(index) +
                                         " is beyond " + (kind == Kind::kF16 ? "f16 (|x| < 65520)" : "bf16") +
                                         "; the cast would make it Inf");
}

size_t CastCompressor::firstUnencodable(std::span<const float> input) {
  if (kind_ == Kind::kNone) return Compressor::firstUnencodable(input);
  // Round to nearest even: from these magnitudes on the cast gives Inf (NaN fails both tests).
  const float limit = kind_ == Kind::kF16 ? 65520.0f : std::bit_cast<float>(0x7F7F8000u);
  for (size_t i = 0; i < input.size(); ++i)
    if (!(std::fabs(input[i]) < limit)) return i;
  return input.size();
}

Result<size_t> CastCompressor::compress(std::span<const float> input, std::span<std::byte> output) {
  TSR_RETURN_IF_ERROR(checkCompressArgs(input, output));
  // One pass finds both: a NaN or Inf (worded as every compressor words it), or a finite value
  // the cast makes Inf.
  if (size_t bad = firstUnencodable(input); bad < input.size())
    return std::isfinite(input[bad]) ? beyondFormat(name(), kind_, input[bad], bad) : checkFinite(input, name());
  switch (kind_) {
    case Kind::kNone:  // an empty tensor's spans may be null, which memcpy may not be given
      if (count()) std::memcpy(output.data(), input.data(), count() * sizeof(float));
      break;
    case Kind::kF16:
      kernels::castF32ToF16(input.data(), count(), payloadAs<uint16_t>(output.data()));
      break;
    case Kind::kBf16:
      kernels::castF32ToBf16(input.data(), count(), payloadAs<uint16_t>(output.data()));
      break;
  }
  advanceStep();
  return maxCompressedBytes();
}

Status CastCompressor::decompress(std::span<const std::byte> compressed, std::span<float> output) {
  TSR_RETURN_IF_ERROR(checkDecompressArgs(compressed, output));
  if (compressed.size() != maxCompressedBytes())
    return Status(Code::kInvalidArgument, name() + ": payload of " + std::to_string(compressed.size()) +
                                              " bytes, expected " + std::to_string(maxCompressedBytes()));
  switch (kind_) {
    case Kind::kNone:
      if (count()) std::memcpy(output.data(), compressed.data(), count() * sizeof(float));
      break;
    case Kind::kF16:
      kernels::castF16ToF32(payloadAs<uint16_t>(compressed.data()), count(), output.data());
      break;
    case Kind::kBf16:
      kernels::castBf16ToF32(payloadAs<uint16_t>(compressed.data()), count(), output.data());
      break;
  }
  return Status::ok();
}

}  // namespace tsr::compress
