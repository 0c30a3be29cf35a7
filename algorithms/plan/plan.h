// A Plan is one rank's part of a collective, as data: a list of operations with dependencies,
// run by the one PlanExecutor. Builders (ring, tree, ...) make plans from pure index math; the
// executor knows nothing of algorithms.
//
// Vocabulary:
//  * slot: which buffer an operation touches: the caller's input, the caller's output, or the
//    plan's scratch area. Plans refer to slots + byte offsets, so one plan (cached per
//    collective, count and dtype) serves any buffers.
//  * op: send, receive (into place), receive-and-reduce (into a scratch staging area, then
//    reduced into its destination), copy, reduce, divide (finishes avg).
//  * deps: indices of earlier ops that must be done before this one starts. A receive with no
//    deps is posted at once, so data can arrive before it is needed.
//  * message id: both sides of a transfer give it the same id; with the communicator and the
//    collective's sequence number it forms the UCX tag (transport/tag.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"

namespace tsr::algorithms {

enum class Slot : uint8_t { kInput = 0, kOutput = 1, kScratch = 2 };

struct BufferRef {
  Slot slot = Slot::kOutput;
  size_t offset = 0;  // bytes
};

// kRecvMerge: receive sign bits (64-bit words) into staging, then Marsit-merge them into dst
// (the received vector stands for mergeA workers, dst for mergeB; kernels/sign.h).
// kLocal: work the run's caller supplies (RunBuffers::local) on [dst, dst + count): Marsit
// packs the signs of a chunk there, so the chunk's sends wait for it and no more.
enum class OpKind : uint8_t { kSend, kRecv, kRecvReduce, kCopy, kReduce, kDivide, kRecvMerge, kLocal };

struct PlanOp {
  OpKind kind = OpKind::kCopy;
  int peer = -1;            // send / receive partner
  uint32_t msgId = 0;       // send / receive
  BufferRef dst{};          // recv, recv-reduce, copy, reduce, divide
  BufferRef src{};          // send, copy, reduce
  BufferRef staging{};      // recv-reduce: where the message lands before reducing
  size_t count = 0;         // elements
  uint64_t divisor = 1;     // divide: finishes avg
  uint32_t mergeA = 0;      // recv-merge: workers behind the received bits
  uint32_t mergeB = 0;      // recv-merge: workers behind the local bits
  uint32_t mergeRound = 0;  // recv-merge: phase of the plan, so a word merged twice by one
                            // rank (torus: row, then column) draws fresh random bits
  // send / recv-reduce: the pair goes to the transport's consumer path (transport.h): the
  // receiver reduces the message into dst where it lands, with no staging copy. Set on both
  // sides by the builder (DenseOptions::reduceOnArrival), so they always agree.
  bool onArrival = false;
  std::vector<uint32_t> deps{};
};

// Which collective a plan implements: sent in the header so peers can check arguments.
enum class CollectiveKind : uint8_t {
  kAllreduce = 1,
  kAllgather = 2,
  kReduceScatter = 3,
  kBroadcast = 4,
  kBarrier = 5,
  kAlltoall = 6,
};
const char* collectiveName(CollectiveKind kind);
// A call as a mismatch's message names it: "allreduce(count=4, dtype=f32, op=sum)",
// "broadcast(count=4, dtype=f32, root=1)", "barrier()"; collective 0 is a posted task.
std::string describeCall(uint8_t collective, size_t count, DataType dtype, ReduceOp op, int root);

struct Plan {
  std::string algorithm;  // "ring", "binomial", ...
  CollectiveKind collective = CollectiveKind::kAllreduce;
  DataType dtype = DataType::kF32;
  ReduceOp op = ReduceOp::kSum;
  size_t count = 0;  // the collective's count argument, as the caller gave it
  int root = -1;     // broadcast
  size_t scratchBytes = 0;
  std::vector<PlanOp> ops;

  // Filled by finalize(): who depends on each op, and how many deps each op waits for.
  std::vector<std::vector<uint32_t>> dependents;
  std::vector<uint32_t> depCount;
  std::vector<int> sendPeers;  // distinct peers this rank sends to
  std::vector<int> recvPeers;  // distinct peers this rank receives from
  // Per peer above: the transfer with the lowest message id, the one a small collective's
  // argument header rides on (executor.h). Both sides of a pair name the same message.
  std::vector<uint32_t> firstSendOp;
  std::vector<uint32_t> firstRecvOp;
  std::vector<int32_t> peerSlot;  // per op: its peer's index above if it is that first one, else -1
  bool reducesOnArrival = false;  // some op has onArrival

  // Adds an op and returns its index.
  uint32_t add(PlanOp op);
  // Computes the derived tables; checks that deps point backwards and ids fit the tag.
  Status finalize();
};

}  // namespace tsr::algorithms
