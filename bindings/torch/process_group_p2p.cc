// Point-to-point on the tessera backend: send, recv (and so isend, irecv and
// batch_isend_irecv, which torch builds on them for a backend without coalescing), over
// tsr_send / tsr_recv; plus the group's lifetime calls of PyTorch 2.x (shutdown, setTimeout).
#include "bindings/torch/process_group_tessera.h"

#include <Python.h>
#include <c10/util/Exception.h>

#include "bindings/torch/placement.h"
#include "bindings/torch/tensor_copies.h"
#include "bindings/torch/work_tessera.h"

namespace tessera_torch {

namespace {

// Refused before anything is sent, naming the rank or tag (as Tessera would, but in torch's
// words: a rank of this group).
void checkPeer(int peer, int rank, int size, int tag, const char* what) {
  TORCH_CHECK(peer >= 0 && peer < size, "tessera: ", what, ": rank ", peer, " is not in this group of ", size,
              " ranks");
  TORCH_CHECK(peer != rank, "tessera: ", what, ": rank ", rank, " cannot ", what, " itself");
  TORCH_CHECK(tag >= 0 && tag <= TSR_MAX_TAG, "tessera: ", what, ": tag ", tag, " is outside 0..", TSR_MAX_TAG);
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::send(std::vector<at::Tensor>& tensors, int dstRank, int tag) {
  TORCH_CHECK(tensors.size() == 1, "tessera: send takes one tensor per call, not ", tensors.size());
  TensorCopies copies;
  at::Tensor t = copies.conform(tensors[0], TensorCopies::kInput);
  tsr_dtype_t dtype = tesseraDtype(t, "send");
  checkPeer(dstRank, getRank(), getSize(), tag, "send");
  // Tessera's point-to-point takes host memory: a CUDA tensor goes through a pinned host copy.
  const Placement place = placementOf({t}, "send", /*hostStaged=*/true);
  at::Tensor host = hostCopy(t);
  return launch(
      c10d::OpType::SEND, c10d::kUnsetTimeout, place, {t},
      "send of " + describe(t) + " to rank " + std::to_string(dstRank) + " (tag " + std::to_string(tag) + ")",
      [&](tsr_request_t* r) { return tsr_send(comm_, host.data_ptr(), host.numel(), dtype, dstRank, tag, r); },
      Kept{{host}}, /*collective=*/false);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) {
  TORCH_CHECK(tensors.size() == 1, "tessera: recv takes one tensor per call, not ", tensors.size());
  TensorCopies copies;
  at::Tensor t = copies.conform(tensors[0], TensorCopies::kOutput);
  tsr_dtype_t dtype = tesseraDtype(t, "recv");
  checkPeer(srcRank, getRank(), getSize(), tag, "recv");
  const Placement place = placementOf({t}, "recv", /*hostStaged=*/true);
  at::Tensor host = hostBufferLike(t);
  // CUDA: the received host copy to the tensor once it is in, and once the caller's stream has
  // done what it had queued before the call (which may still use the tensor).
  std::function<void()> toDevice;
  if (!host.is_same(t))
    toDevice = [host, t, after = afterCallersStream(t.device())]() mutable {
      after();
      t.copy_(host, /*non_blocking=*/true);
    };
  return launch(
      c10d::OpType::RECV, c10d::kUnsetTimeout, place, {t},
      "recv of " + describe(t) + " from rank " + std::to_string(srcRank) + " (tag " + std::to_string(tag) + ")",
      [&](tsr_request_t* r) { return tsr_recv(comm_, host.data_ptr(), host.numel(), dtype, srcRank, tag, r); },
      std::move(toDevice), /*collective=*/false);
}

#if TORCH_VERSION_MAJOR >= 2
void ProcessGroupTessera::shutdown() {
  if (!comm_) return;
  tsr_status_t st = tsr_comm_finalize(comm_);
  // Already ended (abort, an earlier shutdown) is fine; a failure of what it waited for was
  // that call's to report.
  if (st != TSR_OK && st != TSR_ERR_ABORTED)
    TORCH_WARN("tessera: shutdown on rank ", getRank(), ": ", tsr_status_string(st), ": ", tsr_last_error());
  // Every collective has ended; their Works complete on completion threads, whose Future
  // callbacks may need the GIL: let it go meanwhile, if this thread holds it.
  PyThreadState* saved = Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr;
  owed_->waitForNone();
  if (saved) PyEval_RestoreThread(saved);
}

void ProcessGroupTessera::setTimeout(std::chrono::milliseconds timeout) {
  TORCH_CHECK(timeout.count() > 0, "tessera: setTimeout: ", timeout.count(), " ms (a timeout is > 0)");
  std::lock_guard<std::mutex> lock(postMutex_);
  defaultTimeoutMs_ = timeout.count();
}
#endif

}  // namespace tessera_torch
