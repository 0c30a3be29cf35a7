#include "algorithms/compress/error_feedback.h"

#include <algorithm>

#include "algorithms/kernels/feedback_ops.h"

namespace tsr::compress {

ErrorFeedback::ErrorFeedback(std::unique_ptr<Compressor> inner)
    : Compressor(inner->count()), inner_(std::move(inner)), error_(count(), 0.0f), corrected_(count(), 0.0f) {}

std::string ErrorFeedback::name() const { return "ef(" + inner_->name() + ")"; }

void ErrorFeedback::setStep(uint32_t step) {
  Compressor::setStep(step);
  inner_->setStep(step);
}

void ErrorFeedback::resetError() { std::fill(error_.begin(), error_.end(), 0.0f); }

bool ErrorFeedback::setFeedbackError(std::span<const float> error) {
  if (error.size() != error_.size()) return false;
  std::copy(error.begin(), error.end(), error_.begin());
  return true;
}

size_t ErrorFeedback::firstUnencodable(std::span<const float> input) {
  if (size_t bad = Compressor::firstUnencodable(input); bad < input.size()) return bad;
  const size_t n = std::min(count(), input.size());
  for (size_t i = 0; i < n; ++i) corrected_[i] = kernels::efCorrected(input[i], error_[i]);
  return inner_->firstUnencodable(std::span<const float>(corrected_.data(), n));
}

Result<size_t> ErrorFeedback::compress(std::span<const float> input, std::span<std::byte> output) {
  Result<size_t> bytes = encode(input, output);
  if (bytes.isOk()) TSR_RETURN_IF_ERROR(commit());
  return bytes;
}

Result<size_t> ErrorFeedback::encode(std::span<const float> input, std::span<std::byte> output) {
  pending_ = false;
  TSR_RETURN_IF_ERROR(checkCompressArgs(input, output));
  TSR_RETURN_IF_ERROR(checkFinite(input, name()));
  const size_t n = count();
  float* __restrict c = corrected_.data();
  const float* __restrict e = error_.data();
  const float* __restrict g = input.data();
  for (size_t i = 0; i < n; ++i) c[i] = kernels::efCorrected(g[i], e[i]);
  Result<size_t> bytes = inner_->encode(corrected_, output);
  if (!bytes.isOk()) return bytes.status();  // e.g. g + e overflowed to Inf
  encoded_ = std::span<const std::byte>(output.data(), bytes.value());
  pending_ = true;
  return bytes.value();
}

Status ErrorFeedback::commit() {
  if (!pending_) return Status(Code::kInternal, name() + ": commit without an encode");
  pending_ = false;
  // e <- corrected - decompress(payload), decompressing straight into e.
  const std::span<const std::byte> payload = encoded_;
  TSR_RETURN_IF_ERROR(inner_->decompress(payload, error_));
  TSR_RETURN_IF_ERROR(inner_->commit());
  const size_t n = count();
  const float* __restrict c = corrected_.data();
  float* __restrict e = error_.data();
  for (size_t i = 0; i < n; ++i) e[i] = kernels::efKept(c[i], e[i]);
  advanceStep();
  return Status::ok();
}

}  // namespace tsr::compress
