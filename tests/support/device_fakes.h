// Fakes for the direct device path over real UCX, no GPU involved:
//  * FakeDeviceKernels: host memory posing as device memory. Its "device" is the blocks it
//    allocated; checkMemory refuses anything else as host memory, every kernel call counts
//    itself and counts a call given a pointer outside those blocks as a violation. The math is
//    the CPU kernels' (HostStepKernels), so results can be compared bit for bit.
//  * RecordingTransport: wraps the real UcxTransport, claims kCuda support (or not), records
//    the MemoryType and size of every send and receive, and forwards kCuda buffers to UCX as
//    host memory (which they are).
// They test the orchestration (path choice, what runs where, what is posted as what); they
// say nothing about the CUDA kernels or UCX's CUDA transports.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/plan/executor.h"
#include "algorithms/plan/step_kernels.h"
#include "transport/tag.h"
#include "transport/transport.h"

namespace tsr::testing {

class FakeDeviceKernels final : public algorithms::HostStepKernels {
 public:
  std::string describe() const override { return "fake device (host memory, CPU kernels)"; }
  Result<void*> allocate(size_t bytes) override {
    auto p = HostStepKernels::allocate(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    if (p.isOk()) blocks_[static_cast<const char*>(p.value())] = bytes ? bytes : 1;
    return p;
  }
  void release(void* p) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks_.erase(static_cast<const char*>(p));
    }
    HostStepKernels::release(p);
  }
  Status checkMemory(const void* p, size_t bytes) const override {
    if (!isDevice(p, bytes))
      return Status(Code::kInvalidArgument, "the buffer is host memory, not memory of the fake device");
    return Status::ok();
  }
  // The caller's event: the stream it was recorded on; reached while callerWorkDone is set.
  Result<algorithms::CallerEvent> recordCallerEvent(void* stream) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      eventStreams_.push_back(stream);
    }
    return algorithms::CallerEvent(new void*(stream), [](void* p) { delete static_cast<void**>(p); });
  }
  Result<bool> reached(const algorithms::CallerEvent& event) override {
    ++gatePolls;
    if (!event) ++nullEvents;
    return callerWorkDone.load();
  }
  Status copy(void* dst, const void* src, size_t bytes) override {
    count(copies, {dst, src}, bytes);
    return HostStepKernels::copy(dst, src, bytes);
  }
  Status zero(void* p, size_t bytes) override {
    count(zeros, {p}, bytes);
    return HostStepKernels::zero(p, bytes);
  }
  Status reduce(void* dst, const void* src, size_t n, DataType dtype, ReduceOp op) override {
    count(reduces, {dst, src}, n * dataTypeSize(dtype));
    return HostStepKernels::reduce(dst, src, n, dtype, op);
  }
  Status divide(void* data, size_t n, DataType dtype, uint64_t divisor) override {
    count(divides, {data}, n * dataTypeSize(dtype));
    return HostStepKernels::divide(data, n, dtype, divisor);
  }
  Status reduceF16KeepingDropped(uint16_t* dst, const uint16_t* src, size_t n, float* dropped) override {
    count(reduces, {dst, src}, n * 2);
    count(reduces, {dropped}, n * 4, false);
    return HostStepKernels::reduceF16KeepingDropped(dst, src, n, dropped);
  }
  Status averageF16KeepingDropped(uint16_t* data, size_t n, uint64_t divisor, float* dropped) override {
    count(divides, {data}, n * 2);
    count(divides, {dropped}, n * 4, false);
    return HostStepKernels::averageF16KeepingDropped(data, n, divisor, dropped);
  }
  Status signMerge(const uint64_t* v, const uint64_t* s, uint64_t* out, size_t words, uint32_t a, uint32_t b,
                   const kernels::RngStream& rng, uint64_t firstWord) override {
    count(merges, {v, s, out}, words * 8);
    return HostStepKernels::signMerge(v, s, out, words, a, b, rng, firstWord);
  }
  Result<size_t> signPrepare(const float* g, const float* c, size_t n, float* work, uint64_t* words,
                             const kernels::RngStream& rng, double* sumAbs) override {
    count(prepares, {g, c, work}, n * 4);
    count(prepares, {words}, (n + 63) / 64 * 8, false);
    return HostStepKernels::signPrepare(g, c, n, work, words, rng, sumAbs);
  }
  Result<size_t> addScan(const float* g, const float* c, size_t n, float* work) override {
    count(addScans, {g, c, work}, n * 4);
    return HostStepKernels::addScan(g, c, n, work);
  }
  Status signFinish(const float* work, const uint64_t* words, size_t n, float eta, float* out, float* comp) override {
    count(finishes, {work, out, comp}, n * 4);
    return HostStepKernels::signFinish(work, words, n, eta, out, comp);
  }
  // The composition a device backend runs (scale, copy, reduce: each checked above), not the
  // host's fused kernel, so the direct tests compare that composition with the host path.
  Status momentumHandOff(float* g, float* prev, const float* comp, float* carry, size_t n, float mu,
                         float* scratch) override {
    return StepKernels::momentumHandOff(g, prev, comp, carry, n, mu, scratch);
  }

  // The compressed tensor's codec passes.
  Result<size_t> scanNonFinite(const float* x, size_t n) override {
    count(scans, {x}, n * 4);
    return HostStepKernels::scanNonFinite(x, n);
  }
  Status writeFromHost(void* dst, const void* host, size_t bytes) override {
    count(writes, {dst}, bytes);
    return HostStepKernels::writeFromHost(dst, host, bytes);
  }
  Status castTo(DataType to, const float* in, size_t n, uint16_t* out) override {
    count(casts, {in}, n * 4);
    count(casts, {out}, n * 2, false);
    return HostStepKernels::castTo(to, in, n, out);
  }
  Status castFrom(DataType from, const uint16_t* in, size_t n, float* out) override {
    count(casts, {in}, n * 2);
    count(casts, {out}, n * 4, false);
    return HostStepKernels::castFrom(from, in, n, out);
  }
  Status scale(const float* in, size_t n, float factor, float* out) override {
    count(scales, {in, out}, n * 4);
    return HostStepKernels::scale(in, n, factor, out);
  }

  Result<size_t> topkSelect(const float* x, size_t n, size_t k, uint32_t* indices) override {
    count(selects, {x}, n * 4);
    count(selects, {indices}, std::min(n, k) * 4, false);
    return HostStepKernels::topkSelect(x, n, k, indices);
  }
  Result<size_t> randomkSelect(size_t n, size_t k, uint64_t seed, uint32_t step, uint32_t* indices) override {
    count(selects, {indices}, std::min(n, k) * 4);
    return HostStepKernels::randomkSelect(n, k, seed, step, indices);
  }
  Status gather(const float* x, const uint32_t* indices, size_t k, float* out) override {
    count(gathers, {indices, out}, k * 4);
    count(gathers, {x}, 4, false);  // x's extent is not known here; its start must be device memory
    return HostStepKernels::gather(x, indices, k, out);
  }
  Status scatter(const uint32_t* indices, const float* values, size_t k, float* out) override {
    count(scatters, {indices, values}, k * 4);
    count(scatters, {out}, 4, false);
    return HostStepKernels::scatter(indices, values, k, out);
  }
  Result<size_t> firstIndexOutOfRange(const uint32_t* indices, size_t k, size_t n) override {
    count(rangeChecks, {indices}, k * 4);
    return HostStepKernels::firstIndexOutOfRange(indices, k, n);
  }

  Status efKeep(const float* c, size_t n, float* e) override {
    count(efKeeps, {c, e}, n * 4);
    return HostStepKernels::efKeep(c, n, e);
  }
  Status nesterovShift(const float* g, const float* m, size_t n, float mu, float* p) override {
    count(nesterovs, {g, m, p}, n * 4);
    return HostStepKernels::nesterovShift(g, m, n, mu, p);
  }
  Status nesterovUpdate(const float* g, size_t n, float mu, float* m) override {
    count(nesterovs, {g, m}, n * 4, false);
    return HostStepKernels::nesterovUpdate(g, n, mu, m);
  }

  Result<size_t> signPack(const float* x, size_t n, uint64_t* words, const kernels::RngStream& rng,
                          uint64_t firstWord = 0) override {
    count(packs, {x}, n * 4);
    count(packs, {words}, (n + 63) / 64 * 8, false);
    return HostStepKernels::signPack(x, n, words, rng, firstWord);
  }
  Status castResidual(DataType from, const float* x, const uint16_t* h, size_t n, float* r) override {
    count(casts, {x, r}, n * 4);
    count(casts, {h}, n * 2, false);
    return HostStepKernels::castResidual(from, x, h, n, r);
  }
  Status sumAbs(const float* x, size_t n, double* sum) override {
    count(sums, {x}, n * 4);
    return HostStepKernels::sumAbs(x, n, sum);
  }
  Status signDecompress(const uint64_t* words, size_t n, float eta, float* out) override {
    count(unpacks, {out}, n * 4);
    count(unpacks, {words}, (n + 63) / 64 * 8, false);
    return HostStepKernels::signDecompress(words, n, eta, out);
  }
  Status maxAbs(const float* x, size_t n, float* max) override {
    count(sums, {x}, n * 4);
    return HostStepKernels::maxAbs(x, n, max);
  }
  Status sumSquares(const float* x, size_t n, double* sum) override {
    count(sums, {x}, n * 4);
    return HostStepKernels::sumSquares(x, n, sum);
  }
  Status ditherQuantize(const float* x, size_t n, float scale, uint32_t levels, kernels::DitherPartition partition,
                        const kernels::RngStream& rng, int16_t* codes) override {
    count(packs, {x}, n * 4);
    count(packs, {codes}, n * 2, false);
    return HostStepKernels::ditherQuantize(x, n, scale, levels, partition, rng, codes);
  }
  Status ditherDequantize(const int16_t* codes, size_t n, float scale, uint32_t levels,
                          kernels::DitherPartition partition, float* out) override {
    count(unpacks, {codes}, n * 2);
    count(unpacks, {out}, n * 4, false);
    return HostStepKernels::ditherDequantize(codes, n, scale, levels, partition, out);
  }

  std::atomic<int> copies{0}, zeros{0}, reduces{0}, divides{0}, merges{0}, prepares{0}, addScans{0}, finishes{0};
  std::atomic<int> scans{0}, writes{0}, casts{0}, scales{0}, selects{0}, gathers{0}, scatters{0}, rangeChecks{0};
  std::atomic<int> efKeeps{0}, nesterovs{0};
  std::atomic<int> packs{0}, unpacks{0}, sums{0};  // onebit and dithering: encode, decode, scale
  std::atomic<int> violations{0};                  // kernel calls given memory the fake device did not allocate
  std::atomic<bool> callerWorkDone{true};          // reached() reports the caller's event as passed
  std::atomic<int> gatePolls{0}, nullEvents{0};    // reached() calls; those given no event
  std::vector<void*> recordedStreams() const {     // per recordCallerEvent: its stream
    std::lock_guard<std::mutex> lock(mutex_);
    return eventStreams_;
  }

 private:
  bool isDevice(const void* p, size_t bytes) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const char* q = static_cast<const char*>(p);
    auto it = blocks_.upper_bound(q);
    if (it == blocks_.begin()) return false;
    --it;
    return q >= it->first && q + bytes <= it->first + it->second;
  }
  void count(std::atomic<int>& calls, std::initializer_list<const void*> ptrs, size_t bytes, bool call = true) {
    if (call) ++calls;
    for (const void* p : ptrs)
      if (bytes && !isDevice(p, bytes)) ++violations;
  }
  mutable std::mutex mutex_;
  std::map<const char*, size_t> blocks_;
  std::vector<void*> eventStreams_;
};

struct TransferCounts {
  int cudaSends = 0, cudaRecvs = 0, hostSends = 0, hostRecvs = 0;
  size_t cudaBytes = 0, largestHost = 0;  // largest host-memory payload (scalars), headers not counted
  int control = 0;                        // control messages (not counted above)
};

class RecordingTransport final : public transport::Transport {
 public:
  RecordingTransport(transport::Transport& inner, bool claimCuda) : inner_(inner), claimCuda_(claimCuda) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  const std::string& localAddress() const override { return inner_.localAddress(); }
  Status connect(const std::vector<std::string>& a) override { return inner_.connect(a); }
  Status send(int peer, uint64_t tag, const void* b, size_t bytes, transport::MemoryType type,
              transport::Completion* c) override {
    if (Status refused = refuseLaterStages(tag); !refused.isOk()) return refused;
    record(true, type, bytes, tag);
    return inner_.send(peer, tag, b, bytes, transport::MemoryType::kHost, c);
  }
  Status recv(int peer, uint64_t tag, uint64_t mask, void* b, size_t bytes, transport::MemoryType type,
              transport::Completion* c) override {
    record(false, type, bytes, tag);
    return inner_.recv(peer, tag, mask, b, bytes, transport::MemoryType::kHost, c);
  }
  void cancel(transport::Completion* c) override { inner_.cancel(c); }
  bool progress() override { return inner_.progress(); }
  bool armEvents() override { return inner_.armEvents(); }
  void sleepUntilEvent(int ms) override { inner_.sleepUntilEvent(ms); }
  void wake() override { inner_.wake(); }
  Status peerStatus(int peer) const override { return inner_.peerStatus(peer); }
  void markPeerLeft(int peer) override { inner_.markPeerLeft(peer); }
  void abandonPendingOnClose() override { inner_.abandonPendingOnClose(); }
  void beginLeaving() override { inner_.beginLeaving(); }
  bool supportsMemoryType(transport::MemoryType type) const override {
    return type == transport::MemoryType::kHost || (type == transport::MemoryType::kCuda && claimCuda_);
  }
  uint64_t bytesSent() const override { return inner_.bytesSent(); }

  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    counts_ = {};
  }
  // A link that breaks mid-step: from now, the first data send fixes the step's first sequence
  // number S, and every send of sequence S + stages or later is refused (a step's plans run on
  // consecutive numbers: the failure falls after its first `stages` plans).
  void refuseSendsFromStage(uint32_t stages) {
    std::lock_guard<std::mutex> lock(mutex_);
    refuseFrom_ = stages;
    firstSeq_ = -1;
  }
  TransferCounts counts() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return counts_;
  }

 private:
  void record(bool send, transport::MemoryType type, size_t bytes, uint64_t tag) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (tag >> transport::kTagCtlShift & 1) {  // the engine's control messages (abort, goodbye)
      ++counts_.control;
      return;
    }
    if (type == transport::MemoryType::kCuda) {
      ++(send ? counts_.cudaSends : counts_.cudaRecvs);
      counts_.cudaBytes += bytes;
    } else {
      ++(send ? counts_.hostSends : counts_.hostRecvs);
      // Argument headers do not count: a header receive posts room for a small first
      // message; a header send may carry one (algorithms/plan/executor.h), counted alone.
      if ((tag & transport::kTagMsgMask) == transport::kHeaderMessageId) {
        if (!send) return;
        bytes -= std::min(bytes, sizeof(algorithms::WireHeader));
      }
      counts_.largestHost = std::max(counts_.largestHost, bytes);
    }
  }
  Status refuseLaterStages(uint64_t tag) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (refuseFrom_ == 0 || (tag >> transport::kTagCtlShift & 1)) return Status::ok();
    const int64_t seq = static_cast<int64_t>(tag >> transport::kTagSeqShift & transport::kTagSeqMask);
    if (firstSeq_ < 0) firstSeq_ = seq;
    if (seq < firstSeq_ + refuseFrom_) return Status::ok();
    return Status(Code::kPeerFailed, "test: the link broke at sequence " + std::to_string(seq));
  }
  transport::Transport& inner_;
  bool claimCuda_;
  mutable std::mutex mutex_;
  TransferCounts counts_;
  uint32_t refuseFrom_ = 0;  // 0: nothing refused
  int64_t firstSeq_ = -1;
};

}  // namespace tsr::testing
