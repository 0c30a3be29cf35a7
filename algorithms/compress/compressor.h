// Compressor: the interface of the BytePS compression framework, in Tessera form.
//
// A compressor is built for one tensor of `count` f32 elements (registry.h) and owns every
// buffer it needs, so compress / decompress never allocate: they write into caller-provided
// buffers. Error feedback and momentum are decorators (error_feedback.h, momentum.h) that wrap
// any compressor and keep this interface.
//
// Contract of every implementation:
//   * compress(input, output): input.size() == count(); output.size() >= maxCompressedBytes();
//     output.data() 8-byte aligned. Returns the number of bytes written.
//   * Any NaN or Inf in the input: compress returns Code::kNumericError naming the first bad
//     index and changes no state (decorators check before updating their buffers).
//   * decompress(bytes, output): output.size() == count(); bytes from compress of a compressor
//     built with the same parameters (any rank). Malformed payloads give kInvalidArgument.
//   * The step counter keys the random streams (zero-sign coins, random-k, dithering); it
//     advances after each successful compress, and setStep() sets it (ranks that must draw the
//     same random-k indices keep their steps equal).
// Payload layouts (host byte order) are documented in each compressor's header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"

namespace tsr::compress {

class Compressor {
 public:
  explicit Compressor(size_t count) : count_(count) {}
  virtual ~Compressor() = default;
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  size_t count() const { return count_; }
  // Human-readable description with parameters, e.g. "topk(k=100)".
  virtual std::string name() const = 0;
  // Upper bound of compress()'s output for count() elements.
  virtual size_t maxCompressedBytes() const = 0;
  virtual Result<size_t> compress(std::span<const float> input, std::span<std::byte> output) = 0;
  virtual Status decompress(std::span<const std::byte> compressed, std::span<float> output) = 0;
  // compress() in two halves, for a step that can still fail after compressing (its exchange):
  // encode writes the payload but changes no state (error feedback's residual, the momentum);
  // commit, once the step has succeeded, applies what that encode changes, so a failed step
  // leaves the compressor as it was and its redo counts the gradient once. Between the two the
  // output must stay as encode wrote it (commit decodes it) and nothing else may encode or ask
  // firstUnencodable; the input need not survive. Default (no state): compress, nothing.
  virtual Result<size_t> encode(std::span<const float> input, std::span<std::byte> output) {
    return compress(input, output);
  }
  virtual Status commit() { return Status::ok(); }

  // The first element of `input` (count() floats) that compress() would refuse, or count()
  // when it takes them all; changes no state. A step asks every rank before any compresses,
  // so that a value one rank cannot encode (g + e past f16's range after error feedback) fails
  // the step on every rank rather than on that rank alone. Default: the first NaN or Inf.
  virtual size_t firstUnencodable(std::span<const float> input);

  virtual void setStep(uint32_t step) { step_ = step; }
  // What error feedback keeps back for the next step (count() floats), or empty when there is
  // no error-feedback decorator in the chain.
  virtual std::span<const float> feedbackError() const { return {}; }
  // Replaces that error (count() floats: a caller that re-lays-out its tensor moves it along);
  // false when there is no error-feedback decorator in the chain.
  virtual bool setFeedbackError(std::span<const float>) { return false; }
  uint32_t step() const { return step_; }

 protected:
  // Shared argument checks; `what` names the compressor in messages.
  Status checkCompressArgs(std::span<const float> input, std::span<std::byte> output) const;
  Status checkDecompressArgs(std::span<const std::byte> compressed, std::span<float> output) const;
  void advanceStep() { ++step_; }

 private:
  size_t count_;
  uint32_t step_ = 0;
};

// kNumericError naming the first NaN/Inf of `input`, or Ok when all are finite.
Status checkFinite(std::span<const float> input, const std::string& who);

// Pointer into a payload as T (payloads are 8-byte aligned by contract).
template <typename T>
T* payloadAs(std::byte* p) {
  return reinterpret_cast<T*>(p);
}
template <typename T>
const T* payloadAs(const std::byte* p) {
  return reinterpret_cast<const T*>(p);
}

}  // namespace tsr::compress
