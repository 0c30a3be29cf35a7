#include "algorithms/compress/randomk_compressor.h"

#include <algorithm>
#include <cstring>

#include "algorithms/kernels/randomk.h"
#include "algorithms/kernels/topk.h"

namespace tsr::compress {

constexpr size_t kHeader = 8;

RandomkCompressor::RandomkCompressor(size_t count, size_t k, uint64_t seed)
    : Compressor(count),
      k_(k < count ? k : count),
      seed_(seed),
      bitmap_(kernels::randomkBitmapWords(count)),
      indices_(k_) {}

std::string RandomkCompressor::name() const {
  return "randomk(k=" + std::to_string(k_) + ", seed=" + std::to_string(seed_) + ")";
}

size_t RandomkCompressor::maxCompressedBytes() const { return kHeader + 4 * k_; }

std::span<const uint32_t> RandomkCompressor::indicesFor(uint32_t step) {
  size_t k = kernels::randomkSelect(count(), k_, seed_, step, bitmap_.data(), indices_.data());
  return {indices_.data(), k};
}

Result<size_t> RandomkCompressor::compress(std::span<const float> input, std::span<std::byte> output) {
  TSR_RETURN_IF_ERROR(checkCompressArgs(input, output));
  TSR_RETURN_IF_ERROR(checkFinite(input, name()));
  std::span<const uint32_t> idx = indicesFor(step());
  kernels::gatherValues(input.data(), idx.data(), idx.size(), payloadAs<float>(output.data() + kHeader));
  uint32_t header[2] = {step(), static_cast<uint32_t>(idx.size())};
  std::memcpy(output.data(), header, kHeader);
  advanceStep();
  return kHeader + 4 * idx.size();
}

Status RandomkCompressor::decompress(std::span<const std::byte> compressed, std::span<float> output) {
  TSR_RETURN_IF_ERROR(checkDecompressArgs(compressed, output));
  uint32_t header[2] = {0, 0};
  if (compressed.size() >= kHeader) std::memcpy(header, compressed.data(), kHeader);
  if (compressed.size() < kHeader || header[1] != k_ || compressed.size() != kHeader + 4 * k_)
    return Status(Code::kInvalidArgument, name() + ": malformed payload of " + std::to_string(compressed.size()) +
                                              " bytes (k=" + std::to_string(header[1]) + ")");
  std::span<const uint32_t> idx = indicesFor(header[0]);
  std::fill(output.begin(), output.end(), 0.0f);  // not memset: an empty span may be null
  kernels::scatterValues(idx.data(), payloadAs<float>(compressed.data() + kHeader), idx.size(), output.data());
  return Status::ok();
}

}  // namespace tsr::compress
