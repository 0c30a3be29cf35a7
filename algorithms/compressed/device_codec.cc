#include "algorithms/compressed/device_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "algorithms/compress/cast_compressor.h"
#include "algorithms/compress/dithering_compressor.h"
#include "algorithms/compress/error_feedback.h"
#include "algorithms/compress/momentum.h"
#include "algorithms/compress/onebit_compressor.h"
#include "algorithms/compress/randomk_compressor.h"
#include "algorithms/compress/topk_compressor.h"

namespace tsr::compressed {

using compress::CastCompressor;

namespace {
// The compressor under the decorators (the registry builds nesterov(ef(inner))).
const compress::Compressor& innermost(const compress::Compressor& c) {
  if (const auto* m = dynamic_cast<const compress::NesterovMomentum*>(&c)) return innermost(m->inner());
  if (const auto* e = dynamic_cast<const compress::ErrorFeedback*>(&c)) return innermost(e->inner());
  return c;
}
}  // namespace

std::string DeviceCodec::noDeviceForm(const compress::Compressor& c) {
  const compress::Compressor& inner = innermost(c);
  if (dynamic_cast<const CastCompressor*>(&inner) || dynamic_cast<const compress::TopkCompressor*>(&inner) ||
      dynamic_cast<const compress::RandomkCompressor*>(&inner) ||
      dynamic_cast<const compress::OnebitCompressor*>(&inner) ||
      dynamic_cast<const compress::DitheringCompressor*>(&inner))
    return "";
  return "compressor " + inner.name() + " has no device form";
}

Result<std::unique_ptr<DeviceCodec>> DeviceCodec::create(std::shared_ptr<algorithms::StepKernels> kernels,
                                                         const compress::Compressor& c, std::string who) {
  if (std::string why = noDeviceForm(c); !why.empty()) return Status(Code::kNotSupported, who + ": " + why);
  std::unique_ptr<DeviceCodec> d(new DeviceCodec(std::move(kernels), c.count(), std::move(who)));
  using algorithms::DeviceBlock;
  const size_t bytes = c.count() * sizeof(float);
  const compress::Compressor* next = &c;
  if (const auto* m = dynamic_cast<const compress::NesterovMomentum*>(next)) {
    d->nesterov_ = true;
    d->mu_ = m->mu();
    TSR_RETURN_IF_ERROR(DeviceBlock::make(d->kernels_, d->momentum_, bytes, d->who_, "momentum"));
    TSR_RETURN_IF_ERROR(DeviceBlock::make(d->kernels_, d->shifted_, bytes, d->who_, "shifted gradient"));
    next = &m->inner();
  }
  if (const auto* e = dynamic_cast<const compress::ErrorFeedback*>(next)) {
    d->ef_ = true;
    d->efName_ = e->name();
    TSR_RETURN_IF_ERROR(DeviceBlock::make(d->kernels_, d->error_, bytes, d->who_, "error-feedback residual"));
    TSR_RETURN_IF_ERROR(DeviceBlock::make(d->kernels_, d->corrected_, bytes, d->who_, "corrected gradient"));
    next = &e->inner();
  }
  const compress::Compressor& inner = *next;
  d->innerName_ = inner.name();
  d->innerBytes_ = inner.maxCompressedBytes();
  if (const auto* cast = dynamic_cast<const CastCompressor*>(&inner)) {
    d->inner_ = cast->kind() == CastCompressor::Kind::kF16    ? Inner::kF16
                : cast->kind() == CastCompressor::Kind::kBf16 ? Inner::kBf16
                                                              : Inner::kNone;
    if (d->inner_ != Inner::kNone)
      TSR_RETURN_IF_ERROR(DeviceBlock::make(d->kernels_, d->castBack_, bytes, d->who_, "cast check"));
  } else if (const auto* topk = dynamic_cast<const compress::TopkCompressor*>(&inner)) {
    d->inner_ = Inner::kTopk;
    d->k_ = topk->k();
  } else if (const auto* onebit = dynamic_cast<const compress::OnebitCompressor*>(&inner)) {
    d->inner_ = Inner::kOnebit;
    d->scaling_ = onebit->scaling();
    d->scaleBlock_ = onebit->scaleBlock();
    d->scales_.assign(onebit->headerBytes() / sizeof(float), 0.0f);
    d->seed_ = onebit->seed();
  } else if (const auto* dither = dynamic_cast<const compress::DitheringCompressor*>(&inner)) {
    d->inner_ = Inner::kDither;
    d->levels_ = dither->levels();
    d->partition_ = dither->partition();
    d->l2_ = dither->normalize() == kernels::DitherNormalize::kL2;
    d->seed_ = dither->seed();
  } else {
    const auto& randomk = dynamic_cast<const compress::RandomkCompressor&>(inner);
    d->inner_ = Inner::kRandomk;
    d->k_ = randomk.k();
    d->seed_ = randomk.seed();
    TSR_RETURN_IF_ERROR(DeviceBlock::make(d->kernels_, d->indices_, d->k_ * 4, d->who_, "random-k indices"));
  }
  return d;
}

Status DeviceCodec::named(const Status& st) const {
  if (st.isOk()) return st;
  return Status(st.code(), who_ + ": " + st.message());
}

// compress::checkFinite's message, for the stage that would have refused x on the host.
Status DeviceCodec::finiteOrNamed(Result<size_t> bad, const float* x, const std::string& stage) const {
  if (!bad.isOk()) return named(bad.status());
  if (bad.value() >= count_) return Status::ok();
  float v = 0.0f;
  kernels_->readToHost(&v, x + bad.value(), sizeof v).ignore();  // for the message only
  return named(Status(Code::kNumericError, stage + ": non-finite input value " +
                                               (std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf")) + " at index " +
                                               std::to_string(bad.value()) + " of " + std::to_string(count_)));
}

// The host chain's order: p = shifted g (momentum), c = p + e (error feedback), the inner
// compressor on c; then the next m into p's scratch (p is spent). commit: e = c -
// decompress(payload), m = that next m. Nothing changes before commit.
Result<size_t> DeviceCodec::encode(const float* g, std::byte* payload, uint32_t step) {
  algorithms::StepKernels& k = *kernels_;
  encoded_ = nullptr;
  const float* x = g;
  if (nesterov_) {
    TSR_RETURN_IF_ERROR(named(k.nesterovShift(g, momentum_.as<float>(), count_, mu_, shifted_.as<float>())));
    x = shifted_.as<float>();
    TSR_RETURN_IF_ERROR(finiteOrNamed(k.scanNonFinite(x, count_), x, ef_ ? efName_ : innerName_));
  }
  size_t bytes = 0;
  if (ef_) {
    float* c = corrected_.as<float>();
    TSR_RETURN_IF_ERROR(finiteOrNamed(k.addScan(x, error_.as<float>(), count_, c), c, innerName_));
    TSR_ASSIGN_OR_RETURN(bytes, compressInner(c, payload, step));
  } else {
    TSR_ASSIGN_OR_RETURN(bytes, compressInner(x, payload, step));
  }
  if (nesterov_) {  // the next m, mu m + g, into p's scratch
    float* next = shifted_.as<float>();
    TSR_RETURN_IF_ERROR(named(k.copy(next, momentum_.as<float>(), count_ * sizeof(float))));
    TSR_RETURN_IF_ERROR(named(k.nesterovUpdate(g, count_, mu_, next)));
  }
  encoded_ = payload;
  encodedBytes_ = bytes;
  return bytes;
}

Status DeviceCodec::commit() {
  if (encoded_ == nullptr) return named(Status(Code::kInternal, "commit without an encode"));
  const std::byte* payload = encoded_;
  encoded_ = nullptr;
  if (ef_) {
    TSR_RETURN_IF_ERROR(decompress(payload, encodedBytes_, error_.as<float>()));
    TSR_RETURN_IF_ERROR(named(kernels_->efKeep(corrected_.as<float>(), count_, error_.as<float>())));
  }
  if (nesterov_) std::swap(momentum_, shifted_);
  return Status::ok();
}

Result<size_t> DeviceCodec::compressInner(const float* x, std::byte* payload, uint32_t step) {
  if (inner_ == Inner::kTopk || inner_ == Inner::kRandomk) return compressSparse(x, payload, step);
  if (inner_ == Inner::kOnebit) return compressOnebit(x, payload, step);
  if (inner_ == Inner::kDither) return compressDither(x, payload, step);
  algorithms::StepKernels& k = *kernels_;
  Status st;
  switch (inner_) {
    case Inner::kNone:
      st = k.copy(payload, x, count_ * sizeof(float));
      break;
    case Inner::kF16:
    case Inner::kBf16: {
      // A finite x the cast makes Inf is refused, as the host's CastCompressor refuses it.
      auto bad = castAndScan(x, payload);
      if (!bad.isOk()) return bad.status();
      if (bad.value() < count_) {
        float v = 0.0f;
        k.readToHost(&v, x + bad.value(), sizeof v).ignore();  // for the message only
        return named(CastCompressor::beyondFormat(
            innerName_, inner_ == Inner::kF16 ? CastCompressor::Kind::kF16 : CastCompressor::Kind::kBf16, v,
            bad.value()));
      }
      break;
    }
    default:
      break;
  }
  if (!st.isOk()) return named(st);
  return innerBytes_;
}

Result<size_t> DeviceCodec::castAndScan(const float* x, std::byte* payload) {
  algorithms::StepKernels& k = *kernels_;
  const DataType to = inner_ == Inner::kF16 ? DataType::kF16 : DataType::kBF16;
  Status st = k.castTo(to, x, count_, reinterpret_cast<uint16_t*>(payload));
  if (st.isOk()) st = k.castFrom(to, reinterpret_cast<const uint16_t*>(payload), count_, castBack_.as<float>());
  if (!st.isOk()) return named(st);
  auto bad = k.scanNonFinite(castBack_.as<float>(), count_);
  if (!bad.isOk()) return named(bad.status());
  return bad.value();
}

// compress's stages up to the inner compressor's input, into the same scratch (compress
// computes them again: they are pure functions of g and the state, which this leaves alone).
Result<size_t> DeviceCodec::firstUnencodable(const float* g, std::byte* payload, bool gScanned) {
  algorithms::StepKernels& k = *kernels_;
  if (!gScanned) {  // first, as the host chain does: its outer stage scans its own input first
    auto bad = k.scanNonFinite(g, count_);
    if (!bad.isOk()) return named(bad.status());
    if (bad.value() < count_) return bad.value();
  }
  const float* x = g;
  if (nesterov_) {
    TSR_RETURN_IF_ERROR(named(k.nesterovShift(g, momentum_.as<float>(), count_, mu_, shifted_.as<float>())));
    x = shifted_.as<float>();
    auto bad = k.scanNonFinite(x, count_);
    if (!bad.isOk()) return named(bad.status());
    if (bad.value() < count_) return bad.value();
  }
  if (ef_) {
    auto bad = k.addScan(x, error_.as<float>(), count_, corrected_.as<float>());
    if (!bad.isOk()) return named(bad.status());
    if (bad.value() < count_) return bad.value();
    x = corrected_.as<float>();
  }
  if (inner_ == Inner::kF16 || inner_ == Inner::kBf16) return castAndScan(x, payload);  // Inf stays Inf
  return count_;
}

Status DeviceCodec::decompress(const std::byte* payload, size_t bytes, float* out) {
  if (inner_ == Inner::kTopk || inner_ == Inner::kRandomk) return decompressSparse(payload, bytes, out);
  if (bytes != innerBytes_)
    return Status(Code::kInvalidArgument, innerName_ + ": payload of " + std::to_string(bytes) + " bytes, expected " +
                                              std::to_string(innerBytes_));
  if (inner_ == Inner::kOnebit) return decompressOnebit(payload, out);
  if (inner_ == Inner::kDither) return decompressDither(payload, out);
  algorithms::StepKernels& k = *kernels_;
  switch (inner_) {
    case Inner::kNone:
      return named(k.copy(out, payload, count_ * sizeof(float)));
    case Inner::kF16:
      return named(k.castFrom(DataType::kF16, reinterpret_cast<const uint16_t*>(payload), count_, out));
    case Inner::kBf16:
      return named(k.castFrom(DataType::kBF16, reinterpret_cast<const uint16_t*>(payload), count_, out));
    default:
      break;
  }
  return Status::ok();
}

Status DeviceCodec::readError(float* host) const {
  if (!ef_) {
    std::fill(host, host + count_, 0.0f);
    return Status::ok();
  }
  return named(kernels_->readToHost(host, error_.as<float>(), count_ * sizeof(float)));
}

Result<bool> DeviceCodec::writeError(const float* host) {
  if (!ef_) return false;
  TSR_RETURN_IF_ERROR(named(kernels_->writeFromHost(error_.as<float>(), host, count_ * sizeof(float))));
  return true;
}

Status DeviceCodec::readMomentum(float* host) const {
  if (!nesterov_) {
    std::fill(host, host + count_, 0.0f);
    return Status::ok();
  }
  return named(kernels_->readToHost(host, momentum_.as<float>(), count_ * sizeof(float)));
}

// Payloads as compress/topk_compressor.h and randomk_compressor.h lay them out:
//   topk:    [k u32, 0 u32][k indices u32][k values f32]
//   randomk: [step u32, k u32][k values f32] (the indices are redrawn from seed and step).
Result<size_t> DeviceCodec::compressSparse(const float* x, std::byte* payload, uint32_t step) {
  algorithms::StepKernels& k = *kernels_;
  uint32_t header[2] = {0, 0};
  size_t bytes = 0;
  if (inner_ == Inner::kTopk) {
    auto* indices = reinterpret_cast<uint32_t*>(payload + 8);
    auto kk = k.topkSelect(x, count_, k_, indices);
    if (!kk.isOk()) return named(kk.status());
    Status st = k.gather(x, indices, kk.value(), reinterpret_cast<float*>(payload + 8 + 4 * kk.value()));
    if (!st.isOk()) return named(st);
    header[0] = static_cast<uint32_t>(kk.value());
    bytes = 8 + 8 * kk.value();
  } else {
    auto kk = k.randomkSelect(count_, k_, seed_, step, indices_.as<uint32_t>());
    if (!kk.isOk()) return named(kk.status());
    Status st = k.gather(x, indices_.as<uint32_t>(), kk.value(), reinterpret_cast<float*>(payload + 8));
    if (!st.isOk()) return named(st);
    header[0] = step;
    header[1] = static_cast<uint32_t>(kk.value());
    bytes = 8 + 4 * kk.value();
  }
  Status st = k.writeFromHost(payload, header, sizeof header);
  if (!st.isOk()) return named(st);
  return bytes;
}

Status DeviceCodec::decompressSparse(const std::byte* payload, size_t bytes, float* out) {
  algorithms::StepKernels& k = *kernels_;
  uint32_t header[2] = {0, 0};
  if (bytes >= 8) TSR_RETURN_IF_ERROR(named(k.readToHost(header, payload, sizeof header)));
  const bool topk = inner_ == Inner::kTopk;
  const size_t kk = topk ? header[0] : header[1];
  const bool malformed = bytes < 8 || (topk ? kk > k_ || bytes != 8 + 8 * kk : kk != k_ || bytes != 8 + 4 * k_);
  if (malformed)
    return Status(Code::kInvalidArgument, innerName_ + ": malformed payload of " + std::to_string(bytes) +
                                              " bytes (k=" + std::to_string(kk) + ")");
  const uint32_t* indices = indices_.as<uint32_t>();
  const float* values = reinterpret_cast<const float*>(payload + 8);
  if (topk) {
    indices = reinterpret_cast<const uint32_t*>(payload + 8);
    values = reinterpret_cast<const float*>(payload + 8 + 4 * kk);
    auto bad = k.firstIndexOutOfRange(indices, kk, count_);
    if (!bad.isOk()) return named(bad.status());
    if (bad.value() < kk) {
      uint32_t index = 0;
      k.readToHost(&index, indices + bad.value(), sizeof index).ignore();  // for the message only
      return Status(Code::kInvalidArgument, innerName_ + ": payload index " + std::to_string(index) + " out of range " +
                                                std::to_string(count_));
    }
  } else {
    auto drawn = k.randomkSelect(count_, k_, seed_, header[0], indices_.as<uint32_t>());
    if (!drawn.isOk()) return named(drawn.status());
  }
  TSR_RETURN_IF_ERROR(named(k.zero(out, count_ * sizeof(float))));
  return named(k.scatter(indices, values, kk, out));
}

// dithering's payload as compress/dithering_compressor.h lays it out: [scale f32, 0 u32]
// [codes i16]; the scale is computed on the device (sum x^2 in the CPU's block order, or max
// |x|, exact) and read back for the header; the L2 norm's square root is taken on the host
// (ditherL2Scale, as the CPU's).
Result<size_t> DeviceCodec::compressDither(const float* x, std::byte* payload, uint32_t step) {
  algorithms::StepKernels& k = *kernels_;
  const kernels::RngStream rng{seed_, 0, step};
  float scale = 1.0f;
  if (l2_) {
    double squares = 0;
    TSR_RETURN_IF_ERROR(named(k.sumSquares(x, count_, &squares)));
    scale = kernels::ditherL2Scale(squares);
  } else {
    TSR_RETURN_IF_ERROR(named(k.maxAbs(x, count_, &scale)));
  }
  TSR_RETURN_IF_ERROR(
      named(k.ditherQuantize(x, count_, scale, levels_, partition_, rng, reinterpret_cast<int16_t*>(payload + 8))));
  uint32_t header[2] = {0, 0};
  std::memcpy(header, &scale, sizeof scale);
  TSR_RETURN_IF_ERROR(named(k.writeFromHost(payload, header, sizeof header)));
  return innerBytes_;
}

Status DeviceCodec::decompressDither(const std::byte* payload, float* out) {
  algorithms::StepKernels& k = *kernels_;
  float scale = 0.0f;
  TSR_RETURN_IF_ERROR(named(k.readToHost(&scale, payload, sizeof scale)));
  return named(
      k.ditherDequantize(reinterpret_cast<const int16_t*>(payload + 8), count_, scale, levels_, partition_, out));
}

// onebit's payload: the host compressor's geometry (scale blocks, header), so both paths
// write the same bytes; one sum |x| per block, computed on the device.
Result<size_t> DeviceCodec::compressOnebit(const float* x, std::byte* payload, uint32_t step) {
  algorithms::StepKernels& k = *kernels_;
  const kernels::RngStream rng{seed_, 0, step};
  const compress::OnebitCompressor geometry(count_, scaling_, seed_, scaleBlock_);
  std::fill(scales_.begin(), scales_.end(), 0.0f);  // the header's padding, as the host writes it
  std::fill_n(scales_.begin(), geometry.scaleCount(), 1.0f);
  if (scaling_ && count_ > 0) {  // every block's sum at once: one read back, not one a block
    sums_.assign(geometry.scaleCount(), 0.0);
    TSR_RETURN_IF_ERROR(named(k.sumAbsPerSpan(x, count_, geometry.blockLength(0), sums_.data())));
    for (size_t b = 0; b < geometry.scaleCount(); ++b)
      scales_[b] = static_cast<float>(sums_[b] / static_cast<double>(geometry.blockLength(b)));
  }
  auto* words = reinterpret_cast<uint64_t*>(payload + geometry.headerBytes());
  TSR_RETURN_IF_ERROR(finiteOrNamed(k.signPack(x, count_, words, rng), x, innerName_));
  TSR_RETURN_IF_ERROR(named(k.writeFromHost(payload, scales_.data(), geometry.headerBytes())));
  return innerBytes_;
}

Status DeviceCodec::decompressOnebit(const std::byte* payload, float* out) {
  algorithms::StepKernels& k = *kernels_;
  const compress::OnebitCompressor geometry(count_, scaling_, seed_, scaleBlock_);
  TSR_RETURN_IF_ERROR(named(k.readToHost(scales_.data(), payload, geometry.scaleCount() * sizeof(float))));
  const auto* words = reinterpret_cast<const uint64_t*>(payload + geometry.headerBytes());
  for (size_t b = 0; b < geometry.scaleCount(); ++b)
    TSR_RETURN_IF_ERROR(named(k.signDecompress(words + geometry.blockBegin(b) / 64, geometry.blockLength(b), scales_[b],
                                               out + geometry.blockBegin(b))));
  return Status::ok();
}

}  // namespace tsr::compressed
