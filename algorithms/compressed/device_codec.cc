#include "algorithms/compressed/device_codec.h"

#include <algorithm>

#include "algorithms/compress/cast_compressor.h"
#include "algorithms/compress/error_feedback.h"
#include "algorithms/compress/momentum.h"

namespace tsr::compressed {

using compress::CastCompressor;

std::string DeviceCodec::noDeviceForm(const compress::Compressor& c) {
  if (dynamic_cast<const compress::NesterovMomentum*>(&c))
    return "momentum=nesterov has no device form yet (" + c.name() + ")";
  if (dynamic_cast<const compress::ErrorFeedback*>(&c))
    return "ef=vanilla has no device form yet (" + c.name() + "; ef=none has one)";
  if (dynamic_cast<const CastCompressor*>(&c)) return "";
  return "compressor " + c.name() + " has no device form yet (none, fp16, bf16 have)";
}

Result<std::unique_ptr<DeviceCodec>> DeviceCodec::create(std::shared_ptr<algorithms::StepKernels> kernels,
                                                         const compress::Compressor& c, std::string who) {
  if (std::string why = noDeviceForm(c); !why.empty()) return Status(Code::kNotSupported, who + ": " + why);
  std::unique_ptr<DeviceCodec> d(new DeviceCodec(std::move(kernels), c.count(), std::move(who)));
  const auto& cast = dynamic_cast<const CastCompressor&>(c);
  d->inner_ = cast.kind() == CastCompressor::Kind::kF16    ? Inner::kF16
              : cast.kind() == CastCompressor::Kind::kBf16 ? Inner::kBf16
                                                           : Inner::kNone;
  d->innerName_ = cast.name();
  d->innerBytes_ = cast.maxCompressedBytes();
  return d;
}

Status DeviceCodec::named(const Status& st) const {
  if (st.isOk()) return st;
  return Status(st.code(), who_ + ": " + st.message());
}

Result<size_t> DeviceCodec::compress(const float* g, std::byte* payload, uint32_t) {
  algorithms::StepKernels& k = *kernels_;
  Status st;
  switch (inner_) {
    case Inner::kNone: st = k.copy(payload, g, count_ * sizeof(float)); break;
    case Inner::kF16: st = k.castTo(DataType::kF16, g, count_, reinterpret_cast<uint16_t*>(payload)); break;
    case Inner::kBf16: st = k.castTo(DataType::kBF16, g, count_, reinterpret_cast<uint16_t*>(payload)); break;
  }
  if (!st.isOk()) return named(st);
  return innerBytes_;
}

Status DeviceCodec::decompress(const std::byte* payload, size_t bytes, float* out) {
  if (bytes != innerBytes_)
    return Status(Code::kInvalidArgument, innerName_ + ": payload of " + std::to_string(bytes) + " bytes, expected " +
                                              std::to_string(innerBytes_));
  algorithms::StepKernels& k = *kernels_;
  switch (inner_) {
    case Inner::kNone: return named(k.copy(out, payload, count_ * sizeof(float)));
    case Inner::kF16: return named(k.castFrom(DataType::kF16, reinterpret_cast<const uint16_t*>(payload), count_, out));
    case Inner::kBf16: return named(k.castFrom(DataType::kBF16, reinterpret_cast<const uint16_t*>(payload), count_, out));
  }
  return Status::ok();
}

Status DeviceCodec::readError(float* host) const {
  std::fill(host, host + count_, 0.0f);
  return Status::ok();
}

}  // namespace tsr::compressed
