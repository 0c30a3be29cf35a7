#include "algorithms/compress/momentum.h"

#include <algorithm>

#include "algorithms/kernels/feedback_ops.h"

namespace tsr::compress {

NesterovMomentum::NesterovMomentum(std::unique_ptr<Compressor> inner, float mu)
    : Compressor(inner->count()),
      inner_(std::move(inner)),
      mu_(mu),
      momentum_(count(), 0.0f),
      shifted_(count(), 0.0f) {}

std::string NesterovMomentum::name() const {
  return "nesterov(mu=" + std::to_string(mu_) + ", " + inner_->name() + ")";
}

void NesterovMomentum::setStep(uint32_t step) {
  Compressor::setStep(step);
  inner_->setStep(step);
}

size_t NesterovMomentum::firstUnencodable(std::span<const float> input) {
  if (size_t bad = Compressor::firstUnencodable(input); bad < input.size()) return bad;
  const size_t n = std::min(count(), input.size());
  for (size_t i = 0; i < n; ++i) shifted_[i] = kernels::nesterovShifted(input[i], momentum_[i], mu_);
  return inner_->firstUnencodable(std::span<const float>(shifted_.data(), n));
}

Result<size_t> NesterovMomentum::compress(std::span<const float> input, std::span<std::byte> output) {
  Result<size_t> bytes = encode(input, output);
  if (bytes.isOk()) TSR_RETURN_IF_ERROR(commit());
  return bytes;
}

Result<size_t> NesterovMomentum::encode(std::span<const float> input, std::span<std::byte> output) {
  encoded_ = false;
  TSR_RETURN_IF_ERROR(checkCompressArgs(input, output));
  TSR_RETURN_IF_ERROR(checkFinite(input, name()));
  const size_t n = count();
  const float mu = mu_;
  const float* __restrict g = input.data();
  const float* __restrict m = momentum_.data();
  float* __restrict p = shifted_.data();
  for (size_t i = 0; i < n; ++i) p[i] = kernels::nesterovShifted(g[i], m[i], mu);
  Result<size_t> bytes = inner_->encode(shifted_, output);
  if (!bytes.isOk()) return bytes;  // the inner compressor refused g'
  // The inner encode is done with g': its scratch holds the next m now (the input need not last).
  for (size_t i = 0; i < n; ++i) p[i] = kernels::nesterovNext(g[i], m[i], mu);
  encoded_ = true;
  return bytes;
}

Status NesterovMomentum::commit() {
  if (!encoded_) return Status(Code::kInternal, name() + ": commit without an encode");
  encoded_ = false;
  TSR_RETURN_IF_ERROR(inner_->commit());
  momentum_.swap(shifted_);
  advanceStep();
  return Status::ok();
}

}  // namespace tsr::compress
