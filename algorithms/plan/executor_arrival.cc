// The executor's side of reducing on arrival (PlanOp::onArrival): sends go to the peer's
// consumer path, and a receive-and-reduce registers where its message is to be reduced; the
// transport calls consume() when the message lands, straight from its receive buffer.
#include "algorithms/kernels/reduce.h"
#include "algorithms/plan/executor.h"
#include "transport/tag.h"

namespace tsr::algorithms {

void PlanExecutor::ArrivalReduce::consume(const void* data) { kernels::reduceInto(dst, data, count, dtype, op); }

Status PlanExecutor::postOnArrival(uint32_t index) {
  const PlanOp& op = plan_->ops[index];
  // The consumer reduces on the CPU, and the plan's builder set the flag for both sides.
  if (buffers_.memory != transport::MemoryType::kHost)
    return Status(Code::kInternal, plan_->algorithm + " plan on rank " + std::to_string(id_.rank) + ": op " +
                                       std::to_string(index) + " reduces on arrival, which needs host buffers");
  size_t bytes = op.count * dataTypeSize(plan_->dtype);
  transport::Completion* c = &completions_[index];
  Status st;
  if (op.kind == OpKind::kSend) {
    uint64_t tag = transport::makeDataTag(id_.rank, id_.comm, id_.seq, op.msgId);
    st = transport_.sendToConsumer(op.peer, tag, resolve(op.src), bytes, c);
  } else {
    ArrivalReduce& into = arrivals_[index];
    into.dst = resolve(op.dst);
    into.count = op.count;
    into.dtype = plan_->dtype;
    into.op = plan_->op;
    uint64_t tag = transport::makeDataTag(op.peer, id_.comm, id_.seq, op.msgId);
    st = transport_.recvToConsumer(op.peer, tag, bytes, &into, c);
  }
  if (!st.isOk()) return st;
  inFlight_.push_back(index);
  return Status::ok();
}

}  // namespace tsr::algorithms
