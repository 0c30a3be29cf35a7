#include "algorithms/plan/plan.h"

#include <algorithm>

#include "transport/tag.h"

namespace tsr::algorithms {

const char* collectiveName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllreduce:
      return "allreduce";
    case CollectiveKind::kAllgather:
      return "allgather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kBarrier:
      return "barrier";
    case CollectiveKind::kAlltoall:
      return "alltoall";
  }
  return "unknown-collective";
}

std::string describeCall(uint8_t collective, size_t count, DataType dtype, ReduceOp op, int root) {
  // 0: what a rank posts that is no dense collective (a compressed tensor's step, a task).
  if (collective == 0) return "a tensor step or another task (no dense collective)";
  const auto kind = static_cast<CollectiveKind>(collective);
  if (kind == CollectiveKind::kBarrier) return "barrier()";
  std::string s =
      std::string(collectiveName(kind)) + "(count=" + std::to_string(count) + ", dtype=" + dataTypeName(dtype);
  if (kind == CollectiveKind::kAllreduce || kind == CollectiveKind::kReduceScatter)
    s += ", op=" + std::string(reduceOpName(op));
  if (root >= 0) s += ", root=" + std::to_string(root);
  return s + ")";
}

uint32_t Plan::add(PlanOp op) {
  ops.push_back(std::move(op));
  return static_cast<uint32_t>(ops.size() - 1);
}

Status Plan::finalize() {
  dependents.assign(ops.size(), {});
  depCount.assign(ops.size(), 0);
  sendPeers.clear();
  recvPeers.clear();
  firstSendOp.clear();
  firstRecvOp.clear();
  reducesOnArrival = false;
  for (uint32_t i = 0; i < ops.size(); ++i) {
    const PlanOp& op = ops[i];
    if (op.onArrival && op.kind != OpKind::kSend && op.kind != OpKind::kRecvReduce)
      return Status(Code::kInternal, algorithm + " plan: op " + std::to_string(i) +
                                         " reduces on arrival but is neither a send nor a receive-and-reduce");
    reducesOnArrival |= op.onArrival;
    for (uint32_t d : op.deps) {
      if (d >= i)
        return Status(Code::kInternal,
                      algorithm + " plan: op " + std::to_string(i) + " depends on later op " + std::to_string(d));
      dependents[d].push_back(i);
    }
    depCount[i] = static_cast<uint32_t>(op.deps.size());
    bool transfer = op.kind == OpKind::kSend || op.kind == OpKind::kRecv || op.kind == OpKind::kRecvReduce ||
                    op.kind == OpKind::kRecvMerge;
    if (transfer && op.msgId > transport::kMaxMessageId)
      return Status(Code::kNotSupported,
                    algorithm + " plan: message id " + std::to_string(op.msgId) + " exceeds the tag field");
    if (!transfer) continue;
    bool send = op.kind == OpKind::kSend;
    auto& peers = send ? sendPeers : recvPeers;
    auto& first = send ? firstSendOp : firstRecvOp;
    auto at = std::find(peers.begin(), peers.end(), op.peer);
    if (at == peers.end()) {
      peers.push_back(op.peer);
      first.push_back(i);
    } else {
      uint32_t& f = first[at - peers.begin()];
      if (op.msgId < ops[f].msgId) f = i;
    }
  }
  peerSlot.assign(ops.size(), -1);
  for (size_t k = 0; k < firstSendOp.size(); ++k) peerSlot[firstSendOp[k]] = static_cast<int32_t>(k);
  for (size_t k = 0; k < firstRecvOp.size(); ++k) peerSlot[firstRecvOp[k]] = static_cast<int32_t>(k);
  return Status::ok();
}

}  // namespace tsr::algorithms
