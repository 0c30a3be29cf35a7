#include "algorithms/compress/topk_compressor.h"

#include <algorithm>
#include <cstring>

#include "algorithms/kernels/topk.h"

namespace tsr::compress {

constexpr size_t kHeader = 8;

TopkCompressor::TopkCompressor(size_t count, size_t k)
    : Compressor(count), k_(k < count ? k : count), scratch_(kernels::topkScratchCount(count, k_)) {}

std::string TopkCompressor::name() const { return "topk(k=" + std::to_string(k_) + ")"; }

size_t TopkCompressor::maxCompressedBytes() const { return kHeader + k_ * 8; }

Result<size_t> TopkCompressor::compress(std::span<const float> input, std::span<std::byte> output) {
  TSR_RETURN_IF_ERROR(checkCompressArgs(input, output));
  TSR_RETURN_IF_ERROR(checkFinite(input, name()));
  uint32_t* indices = payloadAs<uint32_t>(output.data() + kHeader);
  size_t k = kernels::topkSelect(input.data(), count(), k_, indices, scratch_.data(), scratch_.size());
  kernels::gatherValues(input.data(), indices, k, payloadAs<float>(output.data() + kHeader + 4 * k));
  uint32_t header[2] = {static_cast<uint32_t>(k), 0};
  std::memcpy(output.data(), header, kHeader);
  advanceStep();
  return kHeader + 8 * k;
}

Status TopkCompressor::decompress(std::span<const std::byte> compressed, std::span<float> output) {
  TSR_RETURN_IF_ERROR(checkDecompressArgs(compressed, output));
  uint32_t k = 0;
  if (compressed.size() >= kHeader) std::memcpy(&k, compressed.data(), 4);
  if (compressed.size() < kHeader || k > k_ || compressed.size() != kHeader + 8 * size_t{k})
    return Status(Code::kInvalidArgument, name() + ": malformed payload of " + std::to_string(compressed.size()) +
                                              " bytes (k=" + std::to_string(k) + ")");
  const uint32_t* indices = payloadAs<uint32_t>(compressed.data() + kHeader);
  for (uint32_t i = 0; i < k; ++i)
    if (indices[i] >= count())
      return Status(Code::kInvalidArgument, name() + ": payload index " + std::to_string(indices[i]) +
                                                " out of range " + std::to_string(count()));
  std::fill(output.begin(), output.end(), 0.0f);  // not memset: an empty span may be null
  kernels::scatterValues(indices, payloadAs<float>(compressed.data() + kHeader + 4 * size_t{k}), k, output.data());
  return Status::ok();
}

}  // namespace tsr::compress
