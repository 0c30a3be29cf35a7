// ProcessGroupTessera: torch.distributed's "tessera" backend over Tessera's C API (tessera.h),
// registered from Python by `import tessera.torch`. One source for PyTorch 1.13 and 2.x: from 2.0
// on a third-party backend is a c10d::Backend that torch's ProcessGroup holds per device type;
// before, it was the c10d::ProcessGroup itself. `Baseclass` names the one this torch has (as
// intel/torch-ccl does), chosen from torch's own version header at compile time.
//
// It serves what data-parallel training uses, on contiguous CPU tensors of float32, float64,
// float16, bfloat16, int32 and int64: allreduce (SUM, AVG, MIN, MAX, PRODUCT), broadcast,
// allgather (into a list or one tensor), reduce_scatter (from a list or one tensor) and
// barrier. Every call is non-blocking underneath: its Work completes from Tessera's progress
// (work_tessera.h). Point-to-point, gather, scatter, reduce and all-to-all are refused with a
// clear error, as is any tensor Tessera cannot take (on a GPU, not contiguous, another dtype).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <torch/version.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif

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

 private:
  // Posts `post` (a tsr_* call that fills the request) and returns its Work; a post that fails
  // locally (bad argument, broken communicator) raises at once, as gloo does.
  c10::intrusive_ptr<c10d::Work> launch(c10d::OpType type, std::vector<at::Tensor> outputs, std::string what,
                                        const std::function<tsr_status_t(tsr_request_t*)>& post,
                                        std::function<void()> finish = {});

  tsr_comm_t comm_ = nullptr;
};

// Tessera's name for a tensor's element type; raises naming the tensor and the dtype when
// Tessera has none (or the tensor is not a contiguous CPU tensor).
tsr_dtype_t tesseraDtype(const at::Tensor& t, const char* what);
tsr_op_t tesseraOp(const c10d::ReduceOp& op);

}  // namespace tessera_torch
