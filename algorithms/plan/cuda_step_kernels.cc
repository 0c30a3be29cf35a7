// The CUDA StepKernels (step_kernels.h): the .cu kernels (algorithms/kernels/cuda) on
// cudaMalloc'd memory, each call launched on the backend's non-blocking stream and
// synchronized before it returns. Called on the progress thread, which must never wait for a
// caller's stream (a held one waits for the progress thread): the stream is non-blocking, the
// caller's order comes from the event its step polls before it starts (caller_gate.h), and
// the scratch grown during a step is stream-ordered (cudaMallocAsync / cudaFreeAsync), where
// cudaFree would wait for the whole device. Compiled only when TSR_CUDA_ENABLED. Status on a
// GPU: docs/gpu.md.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "algorithms/kernels/cuda/cuda_kernels.h"
#include "algorithms/kernels/reduce.h"
#include "algorithms/kernels/sign_ops.h"
#include "algorithms/plan/cuda_device.h"
#include "algorithms/plan/step_kernels.h"

namespace tsr::algorithms {
namespace {

class CudaStepKernels final : public StepKernels {
 public:
  CudaStepKernels(int device, std::string name, cudaStream_t stream, bool pools)
      : device_(device), name_(std::move(name)), stream_(stream), pools_(pools) {}
  ~CudaStepKernels() override {
    freeOnStream(firstBad_);
    freeOnStream(blockSums_);
    freeOnStream(scratch_);
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }

  std::string describe() const override { return "CUDA device " + std::to_string(device_) + " (" + name_ + ")"; }

  Result<void*> allocate(size_t bytes) override {
    void* p = nullptr;
    cudaError_t e = cudaSetDevice(device_);
    if (e == cudaSuccess) e = cudaMalloc(&p, bytes ? bytes : 1);
    // On the kernels' stream: a cudaMemset would run on the legacy default stream, which the
    // non-blocking stream's kernels do not wait for.
    if (e == cudaSuccess) e = cudaMemsetAsync(p, 0, bytes ? bytes : 1, stream_);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream_);
    if (e != cudaSuccess)
      return Status(Code::kInternal, "cudaMalloc(" + std::to_string(bytes) + " bytes): " + cudaText(e));
    return p;
  }
  void release(void* p) override { cudaFree(p); }

  Result<CallerEvent> recordCallerEvent(void* stream) override {
    return recordCallerEventOn(device_, stream, describe());
  }
  Result<bool> reached(const CallerEvent& event) override { return callerEventReached(event, describe()); }

  Status checkMemory(const void* p, size_t) const override {
    cudaPointerAttributes a{};
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
      cudaGetLastError();  // clear it so later calls are unaffected
      return Status(Code::kInvalidArgument, "cudaPointerGetAttributes: " + cudaText(e));
    }
    if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
      return Status(Code::kInvalidArgument, "the buffer is not CUDA device memory (cudaMemoryType " +
                                                std::to_string(static_cast<int>(a.type)) + ")");
    if (a.device != device_)
      return Status(Code::kInvalidArgument, "the buffer is on CUDA device " + std::to_string(a.device) +
                                                ", the tensor's kernels on device " + std::to_string(device_));
    return Status::ok();
  }

  Status copy(void* dst, const void* src, size_t bytes) override {
    if (!bytes || dst == src) return Status::ok();
    return sync(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_), "device copy");
  }
  Status readToHost(void* host, const void* src, size_t bytes) override {
    return sync(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_), "device to host read");
  }
  Status zero(void* p, size_t bytes) override { return sync(cudaMemsetAsync(p, 0, bytes, stream_), "memset"); }

  Status reduce(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op) override {
    if ((dtype != DataType::kF32 && dtype != DataType::kF16) || (op != ReduceOp::kSum && op != ReduceOp::kAvg))
      return Status(Code::kNotSupported, std::string("device reduce of ") + dataTypeName(dtype) + " " +
                                             reduceOpName(op) + ": only f32 and f16 sum/avg have a CUDA kernel");
    if (dtype == DataType::kF16)
      return launched(
          kernels::cuda::reduceSumF16(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count, stream_),
          "reduce");
    return launched(
        kernels::cuda::reduceSumF32(static_cast<float*>(dst), static_cast<const float*>(src), count, stream_),
        "reduce");
  }
  Status divide(void* data, size_t count, DataType dtype, uint64_t divisor) override {
    if (divisor <= 1) return Status::ok();
    if (dtype == DataType::kF16)
      return launched(
          kernels::cuda::divideF16(static_cast<uint16_t*>(data), count, static_cast<float>(divisor), stream_),
          "divide");
    if (dtype != DataType::kF32)
      return Status(Code::kNotSupported,
                    std::string("device divide of ") + dataTypeName(dtype) + ": only f32, f16 have a CUDA kernel");
    return launched(kernels::cuda::divideF32(static_cast<float*>(data), count, static_cast<float>(divisor), stream_),
                    "divide");
  }
  Status reduceF16KeepingDropped(uint16_t* dst, const uint16_t* src, size_t count, float* dropped) override {
    return launched(kernels::cuda::reduceSumF16KeepingDropped(dst, src, count, dropped, stream_),
                    "reduce keeping dropped");
  }
  Status averageF16KeepingDropped(uint16_t* data, size_t count, uint64_t divisor, float* dropped) override {
    return launched(kernels::cuda::averageF16KeepingDropped(data, count, static_cast<float>(divisor), dropped, stream_),
                    "average keeping dropped");
  }
  Status signMerge(const uint64_t* v, const uint64_t* s, uint64_t* out, size_t words, uint32_t a, uint32_t b,
                   const kernels::RngStream& rng, uint64_t firstWord) override {
    return launched(kernels::cuda::signMerge(v, s, out, words, a, b, rng, firstWord, stream_), "sign merge");
  }

  Result<size_t> signPrepare(const float* g, const float* c, size_t count, float* work, uint64_t* words,
                             const kernels::RngStream& rng, double* sumAbs) override {
    TSR_RETURN_IF_ERROR(presetFirstBad(count));
    TSR_RETURN_IF_ERROR(
        launched(kernels::cuda::addPack(g, c, count, work, words, rng, 0, firstBad_, stream_), "sign pack"));
    TSR_RETURN_IF_ERROR(this->sumAbs(work, count, sumAbs));
    return readFirstBad();
  }
  Result<size_t> addScan(const float* g, const float* c, size_t count, float* work) override {
    TSR_RETURN_IF_ERROR(presetFirstBad(count));
    TSR_RETURN_IF_ERROR(launched(kernels::cuda::addScan(g, c, count, work, firstBad_, stream_), "g + c"));
    return readFirstBad();
  }
  Status signFinish(const float* work, const uint64_t* words, size_t count, float eta, float* out,
                    float* comp) override {
    return launched(kernels::cuda::signFinish(work, words, count, eta, out, comp, stream_), "decompress");
  }

  Result<size_t> scanNonFinite(const float* x, size_t count) override {
    TSR_RETURN_IF_ERROR(presetFirstBad(count));
    TSR_RETURN_IF_ERROR(launched(kernels::cuda::scanNonFinite(x, count, firstBad_, stream_), "non-finite scan"));
    return readFirstBad();
  }
  Status writeFromHost(void* dst, const void* host, size_t bytes) override {
    if (!bytes) return Status::ok();
    return sync(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_), "host to device write");
  }
  Status castTo(DataType to, const float* in, size_t count, uint16_t* out) override {
    if (to == DataType::kF16) return launched(kernels::cuda::castF32ToF16(in, count, out, stream_), "cast to f16");
    if (to == DataType::kBF16) return launched(kernels::cuda::castF32ToBf16(in, count, out, stream_), "cast to bf16");
    return Status(Code::kInvalidArgument, std::string("cast of f32 to ") + dataTypeName(to) + ": only f16, bf16");
  }
  Status castFrom(DataType from, const uint16_t* in, size_t count, float* out) override {
    if (from == DataType::kF16) return launched(kernels::cuda::castF16ToF32(in, count, out, stream_), "cast from f16");
    if (from == DataType::kBF16)
      return launched(kernels::cuda::castBf16ToF32(in, count, out, stream_), "cast from bf16");
    return Status(Code::kInvalidArgument, std::string("cast to f32 of ") + dataTypeName(from) + ": only f16, bf16");
  }
  Status scale(const float* in, size_t count, float factor, float* out) override {
    return launched(kernels::cuda::scaleF32(in, count, factor, out, stream_), "scale");
  }
  Status castResidual(DataType from, const float* x, const uint16_t* h, size_t count, float* r) override {
    if (from != DataType::kF16 && from != DataType::kBF16)
      return Status(Code::kInvalidArgument, std::string("cast residual of ") + dataTypeName(from) + ": only f16, bf16");
    return launched(kernels::cuda::castResidual(x, h, count, from == DataType::kF16, r, stream_), "cast residual");
  }
  Result<size_t> topkSelect(const float* x, size_t n, size_t k, uint32_t* indices) override {
    size_t bytes = kernels::cuda::topkScratchBytes(n, k);
    TSR_RETURN_IF_ERROR(growScratch(bytes));
    TSR_RETURN_IF_ERROR(
        launched(kernels::cuda::topkSelect(x, n, k, indices, scratch_, bytes, stream_), "top-k select"));
    return std::min(k, n);
  }
  Result<size_t> randomkSelect(size_t n, size_t k, uint64_t seed, uint32_t step, uint32_t* indices) override {
    size_t bytes = kernels::cuda::randomkScratchBytes(n, k);
    TSR_RETURN_IF_ERROR(growScratch(bytes));
    TSR_RETURN_IF_ERROR(
        launched(kernels::cuda::randomkSelect(n, k, seed, step, indices, scratch_, bytes, stream_), "random-k select"));
    return std::min(k, n);
  }
  Status gather(const float* x, const uint32_t* indices, size_t k, float* out) override {
    return launched(kernels::cuda::gatherF32(x, indices, k, out, stream_), "gather");
  }
  Status scatter(const uint32_t* indices, const float* values, size_t k, float* out) override {
    return launched(kernels::cuda::scatterF32(indices, values, k, out, stream_), "scatter");
  }
  // The blocks' sums, added in order here: kernels::sumAbs's sum bit for bit.
  Status sumAbs(const float* x, size_t count, double* sum) override {
    size_t blocks = kernels::cuda::sumAbsBlocks(count);
    TSR_RETURN_IF_ERROR(growBlockSums(blocks));
    TSR_RETURN_IF_ERROR(launched(kernels::cuda::sumAbsBlockwise(x, count, blockSums_, stream_), "sum |x|"));
    std::vector<double> parts(blocks);
    if (blocks) TSR_RETURN_IF_ERROR(readToHost(parts.data(), blockSums_, blocks * sizeof(double)));
    double total = 0;
    for (double part : parts) total += part;
    *sum = total;
    return Status::ok();
  }
  // Spans of whole 1024-element blocks (onebit's and Marsit's default 4096): every block's sum
  // in one launch and one read back, not one of each a span.
  Status sumAbsPerSpan(const float* x, size_t count, size_t span, double* sums) override {
    if (span == 0 || span % kernels::kSumAbsBlock != 0) return StepKernels::sumAbsPerSpan(x, count, span, sums);
    size_t blocks = kernels::cuda::sumAbsBlocks(count);
    if (blocks == 0) return Status::ok();
    TSR_RETURN_IF_ERROR(growBlockSums(blocks));
    TSR_RETURN_IF_ERROR(launched(kernels::cuda::sumAbsBlockwise(x, count, blockSums_, stream_), "sum |x|"));
    std::vector<double> parts(blocks);
    TSR_RETURN_IF_ERROR(readToHost(parts.data(), blockSums_, blocks * sizeof(double)));
    sumPartsPerSpan(parts.data(), blocks, span / kernels::kSumAbsBlock, sums);
    return Status::ok();
  }
  Result<size_t> signPack(const float* x, size_t count, uint64_t* words, const kernels::RngStream& rng,
                          uint64_t firstWord) override {
    TSR_RETURN_IF_ERROR(presetFirstBad(count));
    TSR_RETURN_IF_ERROR(
        launched(kernels::cuda::signPack(x, count, words, rng, firstWord, firstBad_, stream_), "sign pack"));
    return readFirstBad();
  }
  Status signDecompress(const uint64_t* words, size_t count, float eta, float* out) override {
    return launched(kernels::cuda::signDecompress(words, count, eta, out, stream_), "sign decompress");
  }
  Status maxAbs(const float* x, size_t count, float* max) override {
    // firstBad_ doubles as the 32-bit accumulator (preset to 0: the bits of +0.0f).
    TSR_RETURN_IF_ERROR(presetFirstBad(0));
    auto* bits = reinterpret_cast<unsigned int*>(firstBad_);
    TSR_RETURN_IF_ERROR(launched(kernels::cuda::maxAbsBits(x, count, bits, stream_), "max |x|"));
    unsigned int host = 0;
    TSR_RETURN_IF_ERROR(readToHost(&host, bits, sizeof host));
    std::memcpy(max, &host, sizeof host);
    return Status::ok();
  }
  // The same for sum x^2: kernels::ditherSumSquares bit for bit.
  Status sumSquares(const float* x, size_t count, double* sum) override {
    size_t blocks = kernels::cuda::sumSquaresBlocks(count);
    TSR_RETURN_IF_ERROR(growBlockSums(blocks));
    TSR_RETURN_IF_ERROR(launched(kernels::cuda::sumSquaresBlockwise(x, count, blockSums_, stream_), "sum x^2"));
    std::vector<double> parts(blocks);
    if (blocks) TSR_RETURN_IF_ERROR(readToHost(parts.data(), blockSums_, blocks * sizeof(double)));
    double total = 0;
    for (double part : parts) total += part;
    *sum = total;
    return Status::ok();
  }
  Status ditherQuantize(const float* x, size_t count, float scale, uint32_t levels, kernels::DitherPartition partition,
                        const kernels::RngStream& rng, int16_t* codes) override {
    return launched(kernels::cuda::ditherQuantize(x, count, scale, levels, partition, rng, codes, stream_), "dither");
  }
  Status ditherDequantize(const int16_t* codes, size_t count, float scale, uint32_t levels,
                          kernels::DitherPartition partition, float* out) override {
    return launched(kernels::cuda::ditherDequantize(codes, count, scale, levels, partition, out, stream_), "undither");
  }
  Status efKeep(const float* c, size_t count, float* e) override {
    return launched(kernels::cuda::efKeep(c, count, e, stream_), "error feedback");
  }
  Status nesterovShift(const float* g, const float* m, size_t count, float mu, float* p) override {
    return launched(kernels::cuda::nesterovShift(g, m, count, mu, p, stream_), "nesterov shift");
  }
  Status nesterovUpdate(const float* g, size_t count, float mu, float* m) override {
    return launched(kernels::cuda::nesterovUpdate(g, count, mu, m, stream_), "nesterov update");
  }
  Result<size_t> firstIndexOutOfRange(const uint32_t* indices, size_t k, size_t n) override {
    TSR_RETURN_IF_ERROR(presetFirstBad(k));
    TSR_RETURN_IF_ERROR(launched(kernels::cuda::indexOutOfRange(indices, k, n, firstBad_, stream_), "index check"));
    return readFirstBad();
  }

 private:
  Status sync(cudaError_t e, const char* what) {
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream_);
    if (e != cudaSuccess) return Status(Code::kInternal, describe() + ": " + what + ": " + cudaText(e));
    return Status::ok();
  }
  Status launched(int e, const char* what) { return sync(static_cast<cudaError_t>(e), what); }
  // Scratch allocated and freed in the stream's order, so the progress thread never waits
  // for the device; plain cudaMalloc / cudaFree where the device has no memory pools.
  Status allocOnStream(void** p, size_t bytes) {
    cudaError_t e = pools_ ? cudaMallocAsync(p, bytes, stream_) : cudaMalloc(p, bytes);
    if (e != cudaSuccess) {
      *p = nullptr;
      return Status(Code::kInternal, describe() + ": device scratch of " + std::to_string(bytes) + " bytes (" +
                                         (pools_ ? "cudaMallocAsync" : "cudaMalloc") + "): " + cudaText(e));
    }
    return Status::ok();
  }
  template <typename T>
  void freeOnStream(T*& p) {
    if (p) pools_ ? cudaFreeAsync(p, stream_) : cudaFree(p);
    p = nullptr;
  }
  Status presetFirstBad(size_t count) {
    if (!firstBad_)
      TSR_RETURN_IF_ERROR(allocOnStream(reinterpret_cast<void**>(&firstBad_), sizeof(unsigned long long)));
    host_ = count;
    return sync(cudaMemcpyAsync(firstBad_, &host_, sizeof host_, cudaMemcpyHostToDevice, stream_), "preset");
  }
  Result<size_t> readFirstBad() {
    TSR_RETURN_IF_ERROR(readToHost(&host_, firstBad_, sizeof host_));
    return static_cast<size_t>(host_);
  }
  // The select kernels' scratch, grown to the largest asked for.
  Status growScratch(size_t bytes) {
    if (bytes <= scratchCapacity_) return Status::ok();
    freeOnStream(scratch_);
    scratchCapacity_ = 0;
    TSR_RETURN_IF_ERROR(allocOnStream(&scratch_, bytes));
    scratchCapacity_ = bytes;
    return Status::ok();
  }
  Status growBlockSums(size_t blocks) {
    if (blocks <= blockCapacity_) return Status::ok();
    freeOnStream(blockSums_);
    blockCapacity_ = 0;
    TSR_RETURN_IF_ERROR(allocOnStream(reinterpret_cast<void**>(&blockSums_), blocks * sizeof(double)));
    blockCapacity_ = blocks;
    return Status::ok();
  }

  int device_;
  std::string name_;
  cudaStream_t stream_;
  bool pools_;  // the device has stream-ordered memory pools (cudaMallocAsync)
  unsigned long long* firstBad_ = nullptr;
  unsigned long long host_ = 0;
  double* blockSums_ = nullptr;
  size_t blockCapacity_ = 0;
  void* scratch_ = nullptr;
  size_t scratchCapacity_ = 0;
};

}  // namespace

Result<std::shared_ptr<StepKernels>> openCudaStepKernels() {
  // Non-blocking: the kernels wait for none of the caller's streams (the caller's order is the
  // event its step polls first: caller_gate.h), and the caller's work never waits for them.
  TSR_ASSIGN_OR_RETURN(CudaDeviceStream d, openCudaDeviceStream(cudaStreamNonBlocking));
  int pools = 0;
  if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, d.device) != cudaSuccess) {
    cudaGetLastError();
    pools = 0;
  }
  return std::shared_ptr<StepKernels>(new CudaStepKernels(d.device, std::move(d.name), d.stream, pools != 0));
}

std::function<void()> cudaThreadBinding() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) cudaGetLastError();
  return [device] { cudaSetDevice(device); };  // in CUDA 12 and later, also makes the context current
}

}  // namespace tsr::algorithms
