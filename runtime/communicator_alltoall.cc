// Communicator::alltoallv: every rank sends a block of its own size to every other. The counts
// differ by design, so the per-pair argument header (which checks that both sides called the
// same collective with the same count) cannot check them: the ranks first all-gather their
// send and receive counts and the dtype, and every rank checks the whole matrix, so a pair
// that disagrees is named the same way on every rank before anything is sent. Then a plan of
// one receive and one send per peer (pairwise: peer rank+k, from rank-k) moves the data; the
// block to itself is a copy. Its header count is 0 on every rank: the shared-memory board and
// the headers still tell an alltoallv from any other collective.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/communicator.h"

namespace tsr::runtime {

namespace {

// The blocks received must not share elements (which one would win?), nor the input and output
// share bytes (a block would be overwritten before it is sent): refused, naming the ranks.
Status checkBlocks(const std::string& where, int size, const void* input, const size_t* sendCounts,
                   const size_t* sendDispls, const void* output, const size_t* recvCounts, const size_t* recvDispls,
                   DataType dtype) {
  struct Block {
    size_t begin, end;
    int rank;
  };
  std::vector<Block> received;
  size_t sendLo = SIZE_MAX, sendHi = 0;
  for (int p = 0; p < size; ++p) {
    if (recvCounts[p]) received.push_back({recvDispls[p], recvDispls[p] + recvCounts[p], p});
    if (sendCounts[p])
      sendLo = std::min(sendLo, sendDispls[p]), sendHi = std::max(sendHi, sendDispls[p] + sendCounts[p]);
  }
  std::sort(received.begin(), received.end(), [](const Block& a, const Block& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < received.size(); ++i)
    if (received[i].begin < received[i - 1].end)
      return Status(Code::kInvalidArgument,
                    where + "the output blocks from ranks " + std::to_string(received[i - 1].rank) + " and " +
                        std::to_string(received[i].rank) + " overlap (displacements " +
                        std::to_string(received[i - 1].begin) + " and " + std::to_string(received[i].begin) + ")");
  if (received.empty() || sendHi == 0 || !input || !output) return Status::ok();
  const size_t es = dataTypeSize(dtype);
  auto in = reinterpret_cast<uintptr_t>(input), out = reinterpret_cast<uintptr_t>(output);
  uintptr_t inLo = in + sendLo * es, inHi = in + sendHi * es;
  uintptr_t outLo = out + received.front().begin * es, outHi = out;
  for (const Block& b : received) outHi = std::max<uintptr_t>(outHi, out + b.end * es);
  if (inLo < outHi && outLo < inHi)
    return Status(Code::kInvalidArgument, where + "the output overlaps the input (alltoallv is not in place)");
  return Status::ok();
}

}  // namespace

Result<RequestPtr> Communicator::alltoallv(const void* input, const size_t* sendCounts, const size_t* sendDispls,
                                           void* output, const size_t* recvCounts, const size_t* recvDispls,
                                           DataType dtype) {
  const std::string where = "alltoallv on rank " + std::to_string(rank_) + ": ";
  if (!sendCounts || !sendDispls || !recvCounts || !recvDispls)
    return Status(Code::kInvalidArgument, where + "a count or displacement array is NULL");
  if (!isValidDataType(static_cast<int>(dtype)))
    return Status(Code::kInvalidArgument, where + "invalid dtype " + std::to_string(static_cast<int>(dtype)));
  if (bufferMemory() != transport::MemoryType::kHost)
    return Status(Code::kNotSupported, where + "device buffers are not taken yet (memory type host only)");
  for (int p = 0; p < size_; ++p) {
    if (sendCounts[p] > (size_t{1} << 40) || recvCounts[p] > (size_t{1} << 40))
      return Status(Code::kInvalidArgument, where + "count for rank " + std::to_string(p) + " is too large");
    if (sendCounts[p] && !input)
      return Status(Code::kInvalidArgument, where + "input is NULL with " + std::to_string(sendCounts[p]) +
                                                " elements for rank " + std::to_string(p));
    if (recvCounts[p] && !output)
      return Status(Code::kInvalidArgument, where + "output is NULL with " + std::to_string(recvCounts[p]) +
                                                " elements from rank " + std::to_string(p));
    if (sendDispls[p] > (size_t{1} << 40) || recvDispls[p] > (size_t{1} << 40))
      return Status(Code::kInvalidArgument, where + "displacement for rank " + std::to_string(p) + " is too large");
  }
  TSR_RETURN_IF_ERROR(checkBlocks(where, size_, input, sendCounts, sendDispls, output, recvCounts, recvDispls, dtype));

  // Agree: row r of the matrix is rank r's dtype, then its send counts, then its receive counts.
  const size_t row = 1 + 2 * static_cast<size_t>(size_);
  std::vector<int64_t> mine(row), all(row * size_);
  mine[0] = static_cast<int64_t>(dtype);
  for (int p = 0; p < size_; ++p) {
    mine[1 + p] = static_cast<int64_t>(sendCounts[p]);
    mine[1 + size_ + p] = static_cast<int64_t>(recvCounts[p]);
  }
  TSR_ASSIGN_OR_RETURN(RequestPtr agreed, allgather(mine.data(), all.data(), row, DataType::kI64));
  Status st = agreed->wait();
  if (!st.isOk()) return Status(st.code(), "alltoallv (agreeing on the counts): " + st.message());
  for (int s = 0; s < size_; ++s) {
    if (all[row * s] != static_cast<int64_t>(dtype))
      return Status(Code::kMismatch, "alltoallv: dtype differs: rank " + std::to_string(rank_) + " called it with " +
                                         dataTypeName(dtype) + " but rank " + std::to_string(s) + " with " +
                                         dataTypeName(static_cast<DataType>(all[row * s])));
    for (int d = 0; d < size_; ++d) {
      int64_t sends = all[row * s + 1 + d], expects = all[row * d + 1 + size_ + s];
      if (sends != expects)
        return Status(Code::kMismatch, "alltoallv: count differs: rank " + std::to_string(s) + " sends " +
                                           std::to_string(sends) + " elements to rank " + std::to_string(d) +
                                           ", which expects " + std::to_string(expects) + " from it");
    }
  }

  auto plan = std::make_shared<algorithms::Plan>();
  plan->algorithm = "pairwise";
  plan->collective = algorithms::CollectiveKind::kAlltoall;
  plan->dtype = dtype;
  plan->count = 0;
  const size_t bytes = dataTypeSize(dtype);
  for (int k = 1; k < size_; ++k) {
    const int to = (rank_ + k) % size_, from = (rank_ - k + size_) % size_;
    if (recvCounts[from]) {
      algorithms::PlanOp op;
      op.kind = algorithms::OpKind::kRecv;
      op.peer = from;
      op.dst = {algorithms::Slot::kOutput, recvDispls[from] * bytes};
      op.count = recvCounts[from];
      plan->add(op);
    }
    if (sendCounts[to]) {
      algorithms::PlanOp op;
      op.kind = algorithms::OpKind::kSend;
      op.peer = to;
      op.src = {algorithms::Slot::kInput, sendDispls[to] * bytes};
      op.count = sendCounts[to];
      plan->add(op);
    }
  }
  if (sendCounts[rank_]) {  // equal to recvCounts[rank_]: the matrix was checked
    algorithms::PlanOp op;
    op.kind = algorithms::OpKind::kCopy;
    op.src = {algorithms::Slot::kInput, sendDispls[rank_] * bytes};
    op.dst = {algorithms::Slot::kOutput, recvDispls[rank_] * bytes};
    op.count = sendCounts[rank_];
    plan->add(op);
  }
  TSR_RETURN_IF_ERROR(plan->finalize());
  return submit(std::move(plan), input, output);
}

}  // namespace tsr::runtime
