// ProcessGroupTessera: torch.distributed's "tessera" backend over Tessera's C API (tessera.h),
// registered from Python by `import tessera.torch`. One source for PyTorch 1.13 and 2.x: from 2.0
// on a third-party backend is a c10d::Backend that torch's ProcessGroup holds per device type;
// before, it was the c10d::ProcessGroup itself. `Baseclass` names the one this torch has (as
// intel/torch-ccl does), chosen from torch's own version header at compile time.
//
// It serves, on contiguous CPU or CUDA tensors (placement.h) of float32, float64, float16, bfloat16, int32 and int64:
// allreduce (SUM, AVG, MIN, MAX, PRODUCT; BAND, BOR, BXOR on integers), broadcast, allgather (into a list or one
// tensor), reduce_scatter (from a list or one tensor), their coalesced forms (FSDP2's, on 2.x), barrier and a monitored
// barrier, and reduce, gather and scatter to and from a root. Every call is non-blocking underneath: its Work completes
// from Tessera's progress (work_tessera.h). all_to_all (even or uneven), and send/recv between two ranks (isend, irecv,
// batch_isend_irecv: process_group_p2p.cc). A receive from any source is refused with torch's
// own "does not support" error, and a tensor Tessera cannot take (on another device type, not
// contiguous, another dtype) with one naming it. Each call fails, on every rank, when not done within its
// opts.timeout, else the group's timeout (init_process_group's).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <torch/version.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif

#include "bindings/torch/completion_threads.h"
#include "bindings/torch/placement.h"
#include "tessera/tessera.h"

namespace tessera_torch {

#if TORCH_VERSION_MAJOR >= 2
using Baseclass = c10d::Backend;
#else
using Baseclass = c10d::ProcessGroup;
#endif

class ProcessGroupTessera : public Baseclass {
 public:
  // Creates the Tessera communicator (collective: every rank calls it) from the launch
  // environment with `settings` applied (tsr_comm_init_config's keys: "rank", "size", "peers",
  // "secret", "timeout_ms", ...). Fails (c10::Error) when Tessera's rank or size is not torch's.
  ProcessGroupTessera(int rank, int size, const std::map<std::string, std::string>& settings);
  // A group over a communicator made already (split's), which it takes over.
  ProcessGroupTessera(tsr_comm_t comm, int rank, int size);
  ~ProcessGroupTessera() override;

  const std::string getBackendName() const override { return "tessera"; }
  // The communicator, for Tessera's own Python layer (hooks reuse it): a tsr_comm_t owned by
  // this process group.
  tsr_comm_t communicator() const { return comm_; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts = c10d::AllreduceCoalescedOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(
      at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;
  // A barrier that raises when it has not ended within opts.timeout (torch's default when
  // unset); a dead or stalled peer is named by Tessera's own failure detection before that.
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks = false) override;
  // The number of collectives this group has started: the same on every rank while they agree.
  void setSequenceNumberForGroup() override { sequence_ = 0; }
  uint64_t getSequenceNumberForGroup() override { return sequence_; }
#if TORCH_VERSION_MAJOR >= 2
  // Fails this rank's pending and later collectives and tells the peers (tsr_comm_abort).
  void abort() override;
  // A planned end (destroy_process_group): waits for this rank's pending calls, then ends the
  // communicator (tsr_comm_finalize); later calls raise. The handle Tessera's own Python layer
  // holds stays valid until this group is freed.
  void shutdown() override;
  // The group's timeout for later calls (torch's _set_default_timeout).
  void setTimeout(std::chrono::milliseconds timeout) override;

  // Splitting (process_group_split.cc): split_group / ProcessGroup.split_group make each
  // group's communicator by tsr_comm_split of this one, every rank of this group taking part
  // (the members of `ranks` with one color, the others with none), as ncclCommSplit.
  bool supportsSplitting() const override { return true; }
  c10::intrusive_ptr<Options> getBackendOptions() override;
  c10::intrusive_ptr<Baseclass> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                      const c10::intrusive_ptr<Options>& opts) override;
#endif
  // After a failure, on every live rank (tessera.torch.elastic): tsr_comm_shrink of this
  // group's communicator; the survivors' group, its timeout this one's. Raises the shrink's
  // error (not a majority, no agreement).
  c10::intrusive_ptr<ProcessGroupTessera> shrink();
  // Between steps, on every member: tsr_comm_grow; the grown group (the members first, the
  // replacements after), its timeout this one's, or null when nobody was waiting.
  c10::intrusive_ptr<ProcessGroupTessera> grow();
  // In a replacement (TSR_JOIN=1): tsr_comm_join; its group, with the members' timeout.
  static c10::intrusive_ptr<ProcessGroupTessera> join();

  // Point-to-point (process_group_p2p.cc): tensors[0] to or from one rank of this group.
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;

  // All-to-all, even or uneven (process_group_alltoall.cc), over tsr_alltoallv.
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;

  // To and from a root (process_group_rooted.cc), built on allreduce, allgather and broadcast.
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts = c10d::ReduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts = c10d::GatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts = c10d::ScatterOptions()) override;
#if TORCH_VERSION_MAJOR >= 2
  // FSDP2's collectives (2.x only): several all_gather_into_tensor / reduce_scatter_tensor as
  // one Tessera collective of the tensors laid end to end (process_group_coalesced.cc).
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
#endif

 private:
  // Posts `post` (a tsr_* call that fills the request) and returns its Work; a post that fails
  // locally (bad argument, broken communicator) raises at once, as gloo does.
  // `timeout`: the call's opts.timeout (unset: the group's). Point-to-point calls pass
  // collective false: they do not count in the group's sequence number.
  // `place`: where the tensors are (placement.h); CUDA tensors that Tessera stages are posted
  // with TSR_MEM_CUDA and the caller's current stream.
  // `finish`: the call's last step, on the completing thread (CUDA tensors: on a stream of
  // PyTorch's pool, synchronized there); `kept`: what the collective uses besides the outputs
  // (an input, a staging copy), held as long as the Work, with no last step.
  struct Kept {
    std::vector<at::Tensor> tensors;
  };
  c10::intrusive_ptr<c10d::Work> launch(c10d::OpType type, std::chrono::milliseconds timeout, const Placement& place,
                                        std::vector<at::Tensor> outputs, std::string what,
                                        const std::function<tsr_status_t(tsr_request_t*)>& post,
                                        std::function<void()> finish = {}, bool collective = true, Kept kept = {});
  c10::intrusive_ptr<c10d::Work> launch(c10d::OpType type, std::chrono::milliseconds timeout, const Placement& place,
                                        std::vector<at::Tensor> outputs, std::string what,
                                        const std::function<tsr_status_t(tsr_request_t*)>& post, Kept kept,
                                        bool collective = true) {
    return launch(type, timeout, place, std::move(outputs), std::move(what), post, {}, collective, std::move(kept));
  }

  // launch's post of a call on CUDA tensors that Tessera stages (under postMutex_): TSR_MEM_CUDA
  // and the caller's current stream for this post only.
  tsr_status_t postOnDevice(c10::Device device, const std::string& what,
                            const std::function<tsr_status_t(tsr_request_t*)>& post, tsr_request_t* request);

  tsr_comm_t comm_ = nullptr;
  std::atomic<uint64_t> sequence_{0};
  // Its Works' completions not ended yet: shutdown waits for them.
  std::shared_ptr<OwedCompletions> owed_ = std::make_shared<OwedCompletions>();
  std::mutex postMutex_;                   // a call's timeout and its post go together
  int64_t defaultTimeoutMs_ = 0;           // the group's (guarded by postMutex_)
  int64_t postedTimeoutMs_ = 0;            // the communicator's now (guarded by postMutex_)
  std::optional<c10::Device> cudaDevice_;  // the one CUDA device this rank's calls use (postMutex_)
  // The last split, asked again for each device type the group serves (torch's splitGroup
  // calls split once per device type, here one backend for all): the same group.
  c10::intrusive_ptr<c10d::Store> lastSplitStore_;  // held: its address names one splitGroup call
  std::vector<int> lastSplitRanks_;
  c10::intrusive_ptr<Baseclass> lastSplit_;
};

// "1000 float32": a tensor in messages.
std::string describe(const at::Tensor& t);

// Tessera's name for a tensor's element type; raises naming the tensor and the dtype when
// Tessera has none (or the tensor is not a contiguous CPU tensor).
tsr_dtype_t tesseraDtype(const at::Tensor& t, const char* what);
tsr_op_t tesseraOp(const c10d::ReduceOp& op);

}  // namespace tessera_torch
