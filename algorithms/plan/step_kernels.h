// StepKernels: the local math of a collective step, for buffers that live where a backend's
// kernels run. It is the seam of the direct device path (algorithms/team/device_staging.h): a device
// tensor's step keeps its buffers (gradient, compensation, packed bits, plan scratch) in device
// memory, runs its math through a device backend, and hands the payload buffers to the
// transport as MemoryType::kCuda. The PlanExecutor routes its own local math (copy, reduce,
// divide, the Marsit merge of kRecvMerge) through the run's StepKernels when
// RunBuffers::memory is kCuda; host runs keep calling the CPU kernels directly (no virtual
// call on the hot path).
//
// Backends:
//  * HostStepKernels (here): the CPU kernels on host memory. Tests derive fakes from it
//    (host memory posing as device memory, calls recorded).
//  * the CUDA backend (openCudaStepKernels, plan/cuda_step_kernels.cc, built with
//    TSR_CUDA_ENABLED): the .cu kernels (algorithms/kernels/cuda) on cudaMalloc'd scratch.
//    Status on a GPU: docs/gpu.md.
//
// Every call is complete when it returns (the CUDA backend launches on its stream and
// synchronizes it): simple, and the executor may post a send of what a merge wrote right
// after it. Polling an event instead would let the progress thread move other messages while
// a kernel runs; not done yet. That synchronization never waits on the caller's streams: the
// CUDA backend's stream is non-blocking, and a step starts only once the progress thread has
// polled the caller's event (recordCallerEvent at the call; caller_gate.h) as reached, so a
// stream the caller holds for a collective (tsr_stream_hold) cannot stall the thread that
// releases it. Results match the CPU kernels bit for bit (shared per-element
// code, sums in kernels::sumAbs's and kernels::ditherSumSquares's block orders).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/kernels/dithering.h"
#include "algorithms/kernels/philox.h"
#include "algorithms/plan/caller_event.h"
#include "base/dtype.h"
#include "base/status.h"

namespace tsr::algorithms {

class StepKernels {
 public:
  virtual ~StepKernels() = default;
  // "CUDA device 0 (<name>)", for messages and the log.
  virtual std::string describe() const = 0;

  // Memory the kernels work on (device memory for a device backend), zero-filled.
  virtual Result<void*> allocate(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  // Ok when [p, p + bytes) is memory these kernels can read and write.
  virtual Status checkMemory(const void* p, size_t bytes) const = 0;
  // An event recorded now, on the calling thread, on the caller's `stream` (a cudaStream_t;
  // null: the legacy default stream): a step called now reads its input once the caller's
  // work up to it has finished. The host kernels need none (null).
  virtual Result<CallerEvent> recordCallerEvent(void* stream) {
    (void)stream;
    return CallerEvent();
  }
  // True once the caller's work up to `event` has finished (a null event: at once). Polled,
  // never waited for.
  virtual Result<bool> reached(const CallerEvent& event) {
    (void)event;
    return true;
  }
  // Both in the backend's memory (may overlap: memmove).
  virtual Status copy(void* dst, const void* src, size_t bytes) = 0;
  // From the backend's memory into host memory (small reads: a bad element's value).
  virtual Status readToHost(void* host, const void* src, size_t bytes) = 0;
  virtual Status zero(void* p, size_t bytes) = 0;

  // The plan executor's math (kernels/reduce.h, kernels/sign.h semantics); the CUDA backend's
  // reduce and divide cover f32 and f16 (two-level Marsit's intra-host average).
  virtual Status reduce(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op) = 0;
  virtual Status divide(void* data, size_t count, DataType dtype, uint64_t divisor) = 0;
  // The f16 sum and average's division of an intra-host average (RunBuffers::droppedRounding),
  // adding what their rounding dropped to dropped[i] (kernels/cast_ops.h).
  virtual Status reduceF16KeepingDropped(uint16_t* dst, const uint16_t* src, size_t count, float* dropped) = 0;
  virtual Status averageF16KeepingDropped(uint16_t* data, size_t count, uint64_t divisor, float* dropped) = 0;
  virtual Status signMerge(const uint64_t* v, const uint64_t* s, uint64_t* out, size_t words, uint32_t a, uint32_t b,
                           const kernels::RngStream& rng, uint64_t firstWord) = 0;

  // Marsit's passes (kernels::signPrepare / signFinish): work = g + c, its sign words, sum
  // |work| into *sumAbs (host); returns the first non-finite index of work, or count.
  virtual Result<size_t> signPrepare(const float* g, const float* c, size_t count, float* work, uint64_t* words,
                                     const kernels::RngStream& rng, double* sumAbs) = 0;
  // work = g + c only (a full-precision step); returns the first non-finite index, or count.
  virtual Result<size_t> addScan(const float* g, const float* c, size_t count, float* work) = 0;
  // out = eta * (2 bit - 1), comp = work - out.
  virtual Status signFinish(const float* work, const uint64_t* words, size_t count, float eta, float* out,
                            float* comp) = 0;
  // Marsit's momentum hand-off (kernels::momentumHandOff) with M' = g as given: g = M' - mu
  // prev, carry = comp + mu M', prev = M'; `scratch` holds count floats the call may overwrite.
  // This default composes it from scale, copy and reduce (the same float operations, one pass
  // each, so it rounds as the fused CPU kernel does); the host kernels run the fused one.
  virtual Status momentumHandOff(float* g, float* prev, const float* comp, float* carry, size_t count, float mu,
                                 float* scratch);

  // A compressed tensor's codec passes (algorithms/compressed/device_codec.h), the compressors'
  // math (algorithms/compress) element for element.
  // The first non-finite index of x, or count.
  virtual Result<size_t> scanNonFinite(const float* x, size_t count) = 0;
  // From host memory into the backend's (small writes: a payload's 8-byte header).
  virtual Status writeFromHost(void* dst, const void* host, size_t bytes) = 0;
  // f32 -> f16 or bf16 (`to`) and back (`from`): kernels/cast.h.
  virtual Status castTo(DataType to, const float* in, size_t count, uint16_t* out) = 0;
  virtual Status castFrom(DataType from, const uint16_t* in, size_t count, float* out) = 0;
  // out = in * factor (the average: the sum of the decompressed payloads times 1/N).
  virtual Status scale(const float* in, size_t count, float factor, float* out) = 0;
  // Two-level Marsit's intra-host cast (marsit/marsit_hier_step.h): r = x - from(h) element
  // by element, a non-finite difference (an element that overflows f16) stored as 0.
  virtual Status castResidual(DataType from, const float* x, const uint16_t* h, size_t count, float* r) = 0;
  // Sparse codecs (kernels/topk.h, kernels/randomk.h): min(k, n) increasing indices into
  // `indices`, returning that count; scratch is the backend's own.
  virtual Result<size_t> topkSelect(const float* x, size_t n, size_t k, uint32_t* indices) = 0;
  virtual Result<size_t> randomkSelect(size_t n, size_t k, uint64_t seed, uint32_t step, uint32_t* indices) = 0;
  // out[i] = x[indices[i]]; and out[indices[i]] = values[i] (other elements left alone).
  virtual Status gather(const float* x, const uint32_t* indices, size_t k, float* out) = 0;
  virtual Status scatter(const uint32_t* indices, const float* values, size_t k, float* out) = 0;
  // The first position i with indices[i] >= n (a malformed payload), or k.
  virtual Result<size_t> firstIndexOutOfRange(const uint32_t* indices, size_t k, size_t n) = 0;
  // Error feedback and Nesterov momentum (kernels/feedback_ops.h; c = g + e is addScan):
  // e = efKept(c, e); p = nesterovShifted(g, m, mu); m = nesterovNext(g, m, mu).
  virtual Status efKeep(const float* c, size_t count, float* e) = 0;
  virtual Status nesterovShift(const float* g, const float* m, size_t count, float mu, float* p) = 0;
  virtual Status nesterovUpdate(const float* g, size_t count, float mu, float* m) = 0;
  // onebit (kernels/sign.h): sign words of x (the coin of an exact zero drawn for word
  // firstWord + w: two-level Marsit packs its row block at its place in the whole vector),
  // returning the first non-finite index or count; sum |x| (into host memory, kernels::sumAbs's
  // order); out = eta (2 bit - 1).
  virtual Result<size_t> signPack(const float* x, size_t count, uint64_t* words, const kernels::RngStream& rng,
                                  uint64_t firstWord = 0) = 0;
  virtual Status sumAbs(const float* x, size_t count, double* sum) = 0;
  // sums[b] = sumAbs of x's span b ([b span, min((b + 1) span, count))) for every span, as one
  // sumAbs a span would give them: onebit's and Marsit's scale blocks. Default: one sumAbs a
  // span; a device that sums 1024-element blocks reads them back once instead (sumPartsPerSpan).
  virtual Status sumAbsPerSpan(const float* x, size_t count, size_t span, double* sums);
  virtual Status signDecompress(const uint64_t* words, size_t count, float eta, float* out) = 0;
  // dithering (kernels/dithering.h): max |x| into host memory (exact in any order); sum x^2
  // into host memory (kernels::ditherSumSquares's order: the L2 scale is its float square
  // root, kernels::ditherL2Scale); the codes for a given scale and back.
  virtual Status maxAbs(const float* x, size_t count, float* max) = 0;
  virtual Status sumSquares(const float* x, size_t count, double* sum) = 0;
  virtual Status ditherQuantize(const float* x, size_t count, float scale, uint32_t levels,
                                kernels::DitherPartition partition, const kernels::RngStream& rng, int16_t* codes) = 0;
  virtual Status ditherDequantize(const int16_t* codes, size_t count, float scale, uint32_t levels,
                                  kernels::DitherPartition partition, float* out) = 0;
};

// sums[s] = parts[s m] + ... + parts[min((s + 1) m, partCount) - 1], added in order from 0.0,
// for every span s of m parts: the spans' sumAbs from the 1024-element blocks' sums
// (kernels::sumAbs adds its blocks so), when a span is m blocks long (the last one shorter).
void sumPartsPerSpan(const double* parts, size_t partCount, size_t m, double* sums);

// The CPU kernels over host memory.
class HostStepKernels : public StepKernels {
 public:
  std::string describe() const override { return "host CPU kernels"; }
  Result<void*> allocate(size_t bytes) override;
  void release(void* p) override;
  Status checkMemory(const void* p, size_t bytes) const override;
  Status copy(void* dst, const void* src, size_t bytes) override;
  Status readToHost(void* host, const void* src, size_t bytes) override;
  Status zero(void* p, size_t bytes) override;
  Status reduce(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op) override;
  Status divide(void* data, size_t count, DataType dtype, uint64_t divisor) override;
  Status reduceF16KeepingDropped(uint16_t* dst, const uint16_t* src, size_t count, float* dropped) override;
  Status averageF16KeepingDropped(uint16_t* data, size_t count, uint64_t divisor, float* dropped) override;
  Status signMerge(const uint64_t* v, const uint64_t* s, uint64_t* out, size_t words, uint32_t a, uint32_t b,
                   const kernels::RngStream& rng, uint64_t firstWord) override;
  Result<size_t> signPrepare(const float* g, const float* c, size_t count, float* work, uint64_t* words,
                             const kernels::RngStream& rng, double* sumAbs) override;
  Result<size_t> addScan(const float* g, const float* c, size_t count, float* work) override;
  Status signFinish(const float* work, const uint64_t* words, size_t count, float eta, float* out,
                    float* comp) override;
  Status momentumHandOff(float* g, float* prev, const float* comp, float* carry, size_t count, float mu,
                         float* scratch) override;
  Result<size_t> scanNonFinite(const float* x, size_t count) override;
  Status writeFromHost(void* dst, const void* host, size_t bytes) override;
  Status castTo(DataType to, const float* in, size_t count, uint16_t* out) override;
  Status castFrom(DataType from, const uint16_t* in, size_t count, float* out) override;
  Status scale(const float* in, size_t count, float factor, float* out) override;
  Status castResidual(DataType from, const float* x, const uint16_t* h, size_t count, float* r) override;
  Result<size_t> topkSelect(const float* x, size_t n, size_t k, uint32_t* indices) override;
  Result<size_t> randomkSelect(size_t n, size_t k, uint64_t seed, uint32_t step, uint32_t* indices) override;
  Status gather(const float* x, const uint32_t* indices, size_t k, float* out) override;
  Status scatter(const uint32_t* indices, const float* values, size_t k, float* out) override;
  Result<size_t> firstIndexOutOfRange(const uint32_t* indices, size_t k, size_t n) override;
  Status efKeep(const float* c, size_t count, float* e) override;
  Status nesterovShift(const float* g, const float* m, size_t count, float mu, float* p) override;
  Status nesterovUpdate(const float* g, size_t count, float mu, float* m) override;
  Result<size_t> signPack(const float* x, size_t count, uint64_t* words, const kernels::RngStream& rng,
                          uint64_t firstWord = 0) override;
  Status sumAbs(const float* x, size_t count, double* sum) override;
  Status signDecompress(const uint64_t* words, size_t count, float eta, float* out) override;
  Status maxAbs(const float* x, size_t count, float* max) override;
  Status sumSquares(const float* x, size_t count, double* sum) override;
  Status ditherQuantize(const float* x, size_t count, float scale, uint32_t levels, kernels::DitherPartition partition,
                        const kernels::RngStream& rng, int16_t* codes) override;
  Status ditherDequantize(const int16_t* codes, size_t count, float scale, uint32_t levels,
                          kernels::DitherPartition partition, float* out) override;

 private:
  std::vector<uint32_t> topkScratch_;  // grown on first use, then reused
  std::vector<uint64_t> randomkBitmap_;
};

// The CUDA backend on the current device. Fails (NotSupported) naming why: built without
// CUDA, no CUDA device (with the CUDA runtime's message), a stream that could not be made.
Result<std::shared_ptr<StepKernels>> openCudaStepKernels();

// Makes the calling thread's current CUDA device (now) current on the thread that runs the
// returned function: for the threads that drive UCX, which moves device memory only where a
// CUDA context is current (UCX 1.13's cuda_ipc does not make one current itself). A no-op
// without CUDA.
std::function<void()> cudaThreadBinding();

}  // namespace tsr::algorithms
