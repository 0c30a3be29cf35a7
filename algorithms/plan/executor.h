// PlanExecutor: runs one rank's Plan over a Transport without blocking.
//
// start() posts every op whose deps are met; progress() collects transport completions, runs
// local math (reduce, copy, divide) as soon as its inputs are ready and posts what that
// unblocks. Ready transfers are posted before ready local ops run, and after a caller's kLocal
// op progress() returns (what it unblocked posted), so the transport moves the chunk just
// prepared while the next one waits its turn. The executor owns no thread: the communicator's
// progress thread (or a caller that waits) calls it.
//
// Argument headers: each pair of ranks that talks in the plan exchanges a 32-byte header with
// the collective's arguments; a difference is reported as TSR_ERR_MISMATCH naming both ranks
// and the field. When the first message from one rank to the other (lowest message id) is
// small (0..kInlineBytes, host memory), the header rides in front of it as one message instead
// of two: a small collective then costs one message per transfer, as in MPI, and an empty first
// message (a barrier's round) is the header alone. The receiver
// tells the two forms apart by length, so ranks whose plans differ still meet on the header
// tag and report the mismatch; the receive of such a first message waits for the header.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/plan/plan.h"
#include "algorithms/plan/step_kernels.h"
#include "algorithms/plan/task.h"
#include "transport/transport.h"

namespace tsr::algorithms {

struct RunBuffers {
  const void* input = nullptr;
  void* output = nullptr;
  // Null with plan.scratchBytes > 0 and host memory: the executor allocates it with its own
  // state (one allocation; for small runs, where a pool's bookkeeping would cost more).
  void* scratch = nullptr;
  // kCuda: input, output and scratch are device memory. Payload transfers are posted as
  // kCuda and the plan's local math (copy, reduce, divide, merge) runs through `kernels`
  // (step_kernels.h), which must then be set; headers stay in host memory.
  transport::MemoryType memory = transport::MemoryType::kHost;
  // Random stream of this run's merges (Marsit): seed and step, with this rank, key the bits.
  uint64_t rngSeed = 0;
  uint32_t rngStep = 0;
  // When set, time spent in merges is added here (the progress thread is the only writer).
  uint64_t* mergeNanos = nullptr;
  // Runs the plan's kLocal ops (on the progress thread); plans with none leave it empty.
  std::function<Status(const PlanOp&)> local{};
  // memory == kCuda: the kernels of the plan's local math (see `memory`).
  StepKernels* kernels = nullptr;
  // f16 sum/avg plans (the two-level intra-host average): one float per output element, to
  // which every sum and division into the output adds what its rounding dropped (units of the
  // sum), so the caller keeps it as residual. Same memory as the output. Not for plans that
  // reduce on arrival (the transport's consumer reduces there).
  float* droppedRounding = nullptr;
};

// What travels in the per-peer header message (followed by the first payload when inlined).
struct WireHeader {
  uint32_t magic = 0x54535231;  // "TSR1"
  uint8_t collective = 0;
  uint8_t dtype = 0;
  uint8_t op = 0;
  uint8_t algorithmHash = 0;
  uint32_t comm = 0;
  uint32_t seq = 0;
  int32_t root = -1;
  int32_t sender = -1;
  uint64_t count = 0;
};
static_assert(sizeof(WireHeader) == 32, "header is 32 bytes on the wire");

class PlanExecutor final : public Task {
 public:
  // Largest payload that rides with the header; small enough that a run with three peers
  // allocates its header slots from malloc's thread cache (large requests consolidate).
  static constexpr size_t kInlineBytes = 256;

  PlanExecutor(std::shared_ptr<const Plan> plan, RunBuffers buffers, RunIdentity id, transport::Transport& transport);
  PlanExecutor(const PlanExecutor&) = delete;
  PlanExecutor& operator=(const PlanExecutor&) = delete;

  // Ok when done, InProgress while running, or the error that ended the run.
  Status start() override;
  Status progress() override;
  // Cancels what is in flight; the run reports `reason` from then on.
  void abort(const Status& reason) override;
  // True when no transport operation still refers to this executor's memory.
  bool quiescent() const override;
  // The peer the oldest unfinished receive waits for (-1 if none): named in timeouts.
  int waitingOn() const override;
  std::string describe() const override { return collectiveName(plan_->collective); }
  const Plan& plan() const { return *plan_; }
  const Status& status() const { return status_; }

 private:
  void* resolve(const BufferRef& ref) const;
  float* droppedAt(const PlanOp& op) const;
  Status post(uint32_t index, bool plain = false);
  Status finishLocal(uint32_t index);
  Status finishOnDevice(uint32_t index);
  void markDone(uint32_t index);
  void enqueue(uint32_t index);
  Status postReadyTransfers();
  static WireHeader headerOf(const Plan& p, RunIdentity id);
  Status checkHeader(const WireHeader& theirs, int peer) const;
  Status takeHeader(size_t slot);
  bool headerTaken(int peer) const;  // the peer's header has come and been checked
  Status postFirstRecv(uint32_t index, size_t slot);
  void land(uint32_t index, size_t slot);
  Status sendInline(uint32_t index, size_t slot);
  bool inlinable(uint32_t index) const;
  // An onArrival send or receive-and-reduce through the transport's consumer path
  // (executor_arrival.cc).
  Status postOnArrival(uint32_t index);
  Status fail(Status status);
  Status collect();

  // A list of op indices in the executor's block (each op enters each list at most once, so
  // the plan's op count bounds it).
  struct IndexList {
    uint32_t* data = nullptr;
    size_t count = 0;
    void push_back(uint32_t v) { data[count++] = v; }
    void clear() { count = 0; }
    void resize(size_t n) { count = n; }
    size_t size() const { return count; }
    uint32_t* begin() const { return data; }
    uint32_t* end() const { return data + count; }
    uint32_t& operator[](size_t i) const { return data[i]; }
  };
  enum class HeaderIn : uint8_t { kPending, kAlone, kWithPayload };
  struct PeerIn {  // per recv peer
    HeaderIn state = HeaderIn::kPending;
    bool firstWaits = false;  // its first receive is ready and waits for the header
  };
  static constexpr size_t kHeaderSlot = sizeof(WireHeader) + kInlineBytes;

  // The header completions follow the ops' in completions_: recv peers', then send peers'
  // (a send peer's is unused when the header rides with the first message).
  transport::Completion& inHeader(size_t slot) { return completions_[plan_->ops.size() + slot]; }
  transport::Completion& outHeader(size_t slot) {
    return completions_[plan_->ops.size() + plan_->recvPeers.size() + slot];
  }

  std::shared_ptr<const Plan> plan_;
  RunBuffers buffers_;
  RunIdentity id_;
  transport::Transport& transport_;
  Status status_{Code::kInProgress, ""};

  // Per-run state in two allocations (a small collective's cost is mostly its bookkeeping):
  // completions_ (per op, then per peer header) and block_: the header slots ((recv peers +
  // send peers) x kHeaderSlot), the scratch when the run brings none, the index lists, and in_.
  std::vector<transport::Completion> completions_;
  // Per op of a plan that reduces on arrival (empty otherwise): what its message is reduced
  // into when the transport hands it over.
  struct ArrivalReduce : transport::Consumer {
    void* dst = nullptr;
    size_t count = 0;
    DataType dtype = DataType::kF32;
    ReduceOp op = ReduceOp::kSum;
    void consume(const void* data) override;
  };
  std::vector<ArrivalReduce> arrivals_;
  struct FreeBlock {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, FreeBlock> block_;
  uint8_t* headerBytes_ = nullptr;
  uint32_t* pending_ = nullptr;  // deps not yet done, per op
  IndexList inFlight_;           // ops posted to the transport
  IndexList readyTransfers_;     // deps met, not yet posted (FIFO)
  IndexList readyLocal_;         // deps met, not yet run (FIFO from localHead_)
  PeerIn* in_ = nullptr;         // per recv peer
  size_t localHead_ = 0;
  size_t doneCount_ = 0;

  WireHeader myHeader_;
  size_t headersChecked_ = 0;
  bool landed_ = false;  // a first message landed from its header: collect again
};

}  // namespace tsr::algorithms
