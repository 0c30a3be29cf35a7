#include "bindings/torch/process_group_tessera.h"

#include <c10/util/Exception.h>

#include "bindings/torch/tensor_copies.h"
#include "bindings/torch/work_tessera.h"

namespace tessera_torch {

std::string describe(const at::Tensor& t) {
  return std::to_string(t.numel()) + " " + std::string(c10::toString(t.scalar_type()));
}

namespace {

// All tensors of a list: same dtype and size as the first (a collective's list of blocks).
void checkSame(const std::vector<at::Tensor>& list, const at::Tensor& like, const char* what) {
  for (size_t i = 0; i < list.size(); ++i) {
    tesseraDtype(list[i], what);
    TORCH_CHECK(list[i].scalar_type() == like.scalar_type() && list[i].numel() == like.numel(), "tessera: ", what,
                ": tensor ", i, " is ", describe(list[i]), " where ", describe(like), " was expected");
  }
}

}  // namespace

tsr_dtype_t tesseraDtype(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.device().is_cpu() || t.device().is_cuda(), "tessera: ", what, ": a tensor on ", t.device().str(),
              ": the tessera backend takes CPU and CUDA tensors");
  TORCH_CHECK(t.layout() == c10::kStrided, "tessera: ", what, ": a tensor of layout ", t.layout(),
              ": the tessera backend takes dense (strided) tensors; sparse ones are not supported (.to_dense())");
  TORCH_CHECK(t.is_contiguous(), "tessera: ", what, ": a non-contiguous tensor (use .contiguous())");
  switch (t.scalar_type()) {
    case at::kFloat:
      return TSR_FLOAT32;
    case at::kDouble:
      return TSR_FLOAT64;
    case at::kHalf:
      return TSR_FLOAT16;
    case at::kBFloat16:
      return TSR_BFLOAT16;
    case at::kInt:
      return TSR_INT32;
    case at::kLong:
      return TSR_INT64;
    default:
      break;
  }
  TORCH_CHECK(false, "tessera: ", what, ": dtype ", c10::toString(t.scalar_type()),
              " is not taken (float32, float64, float16, bfloat16, int32, int64; uint8, int8 and bool as int32)");
}

tsr_op_t tesseraOp(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return TSR_SUM;
    case c10d::ReduceOp::AVG:
      return TSR_AVG;
    case c10d::ReduceOp::MIN:
      return TSR_MIN;
    case c10d::ReduceOp::MAX:
      return TSR_MAX;
    case c10d::ReduceOp::PRODUCT:
      return TSR_PROD;
    case c10d::ReduceOp::BAND:  // integer and bool tensors (gloo's too); float ones are refused
      return TSR_BAND;
    case c10d::ReduceOp::BOR:
      return TSR_BOR;
    case c10d::ReduceOp::BXOR:
      return TSR_BXOR;
    default:
      break;
  }
  const char* names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"};
  const int code = static_cast<int>(op.op_);
  TORCH_CHECK(false, "tessera: reduce op ", code >= 0 && code < 9 ? names[code] : std::to_string(code).c_str(),
              " is not taken (SUM, AVG, MIN, MAX, PRODUCT, BAND, BOR, BXOR; PREMUL_SUM is not)");
}

ProcessGroupTessera::ProcessGroupTessera(int rank, int size, const std::map<std::string, std::string>& settings)
    : Baseclass(rank, size) {
  std::vector<tsr_param_t> params;
  for (const auto& [key, value] : settings) params.push_back({key.c_str(), value.c_str()});
  tsr_status_t st = tsr_comm_init_config(&comm_, params.data(), params.size());
  TORCH_CHECK(st == TSR_OK, "tessera: cannot create the communicator (", tsr_status_string(st),
              "): ", tsr_last_error());
  int tsrRank = -1, tsrSize = -1;
  tsr_comm_rank(comm_, &tsrRank);
  tsr_comm_size(comm_, &tsrSize);
  int timeoutMs = 0;
  tsr_comm_timeout(comm_, &timeoutMs);
  defaultTimeoutMs_ = postedTimeoutMs_ = timeoutMs;
  if (tsrRank != rank || tsrSize != size) {
    tsr_comm_destroy(comm_);
    comm_ = nullptr;
    TORCH_CHECK(false, "tessera: torch.distributed says rank ", rank, " of ", size, " but Tessera's launch says rank ",
                tsrRank, " of ", tsrSize, ": start the job with one launcher, or pass rank and world_size that agree");
  }
}

ProcessGroupTessera::ProcessGroupTessera(tsr_comm_t comm, int rank, int size) : Baseclass(rank, size), comm_(comm) {
  int timeoutMs = 0;
  tsr_comm_timeout(comm_, &timeoutMs);
  defaultTimeoutMs_ = postedTimeoutMs_ = timeoutMs;
}

ProcessGroupTessera::~ProcessGroupTessera() {
  if (comm_) tsr_comm_destroy(comm_);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::launch(c10d::OpType type, std::chrono::milliseconds timeout,
                                                           const Placement& place, std::vector<at::Tensor> outputs,
                                                           std::string what,
                                                           const std::function<tsr_status_t(tsr_request_t*)>& post,
                                                           std::function<void()> finish, bool collective, Kept kept) {
  // Copies of the call's tensors (tensor_copies.h): the outputs' go back as its last step, the
  // caller's tensors are its outputs, the copies are kept.
  if (const TensorCopies* copies = TensorCopies::current(); copies && copies->active()) {
    finish = [inner = std::move(finish), back = copies->copyingBack()] {
      if (inner) inner();
      back();
    };
    for (auto& t : outputs) t = copies->original(t);
    kept.tensors.insert(kept.tensors.end(), copies->copies().begin(), copies->copies().end());
  }
  auto work = c10::make_intrusive<WorkTessera>(getRank(), type, std::move(outputs), std::move(finish), place.cuda,
                                               std::move(kept.tensors));
  tsr_request_t request = nullptr;
  tsr_status_t st;
  {
    // The call's own timeout (opts.timeout), else the group's: set on the communicator for
    // the calls posted from now on, so the setting and the post go together.
    std::lock_guard<std::mutex> lock(postMutex_);
    const int64_t wanted = timeout.count() > 0 ? timeout.count() : defaultTimeoutMs_;
    if (wanted != postedTimeoutMs_ && tsr_comm_set_timeout(comm_, static_cast<int>(wanted)) == TSR_OK)
      postedTimeoutMs_ = wanted;
    if (place.cuda && !place.hostStaged)
      st = postOnDevice(*place.cuda, what, post, &request);
    else
      st = post(&request);
  }
  TORCH_CHECK(st == TSR_OK, "tessera: ", what, " on rank ", getRank(), " (", tsr_status_string(st),
              "): ", tsr_last_error());
  if (collective) ++sequence_;  // a call refused before its post is not one of the group's
  work->watch(request, std::move(what), owed_);
  return work;
}

tsr_status_t ProcessGroupTessera::postOnDevice(c10::Device device, const std::string& what,
                                               const std::function<tsr_status_t(tsr_request_t*)>& post,
                                               tsr_request_t* request) {
  TORCH_CHECK(!cudaDevice_ || *cudaDevice_ == device, "tessera: ", what, " on rank ", getRank(), ": a tensor on ",
              device.str(), " where this rank's earlier calls used ", cudaDevice_ ? cudaDevice_->str() : "",
              ": one CUDA device per rank");
  c10::DeviceGuard onDevice(device);  // Tessera's copier opens on the current device
  // Device memory and the caller's stream for this thread's post only: a hook's Python call on
  // another thread keeps its own setting meanwhile.
  tsr_status_t st = tsr_comm_set_thread_buffers(comm_, TSR_MEM_CUDA, currentStream(device));
  TORCH_CHECK(st == TSR_OK, "tessera: ", what, " on rank ", getRank(), " on ", device.str(), " (",
              tsr_status_string(st), "): ", tsr_last_error());
  cudaDevice_ = device;
  st = post(request);
  const std::string why = st == TSR_OK ? std::string() : tsr_last_error();
  tsr_comm_clear_thread_buffers(comm_);
  TORCH_CHECK(st == TSR_OK, "tessera: ", what, " on rank ", getRank(), " (", tsr_status_string(st), "): ", why);
  return st;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::allreduce(std::vector<at::Tensor>& tensors,
                                                              const c10d::AllreduceOptions& opts) {
  TORCH_CHECK(tensors.size() == 1, "tessera: allreduce takes one tensor per call, not ", tensors.size());
  TensorCopies copies;
  at::Tensor t = copies.conform(tensors[0], TensorCopies::kInPlace);
  tsr_dtype_t dtype = tesseraDtype(t, "allreduce");
  tsr_op_t op = tesseraOp(copies.reduceOp(opts.reduceOp, "allreduce"));
  return launch(
      c10d::OpType::ALLREDUCE, opts.timeout, placementOf({t}, "allreduce"), {t}, "allreduce of " + describe(t),
      [&](tsr_request_t* r) { return tsr_allreduce(comm_, t.data_ptr(), t.data_ptr(), t.numel(), dtype, op, r); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                        const c10d::AllreduceCoalescedOptions& opts) {
  // One allreduce of the tensors laid end to end, copied back when it is done.
  TORCH_CHECK(!tensors.empty(), "tessera: allreduce_coalesced of no tensors");
  for (auto& t : tensors) tesseraDtype(t, "allreduce_coalesced");
  placementOf(tensors, "allreduce_coalesced");  // before at::cat, which would fail less clearly
  for (auto& t : tensors)
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(), "tessera: allreduce_coalesced: tensors of ",
                c10::toString(tensors[0].scalar_type()), " and ", c10::toString(t.scalar_type()), " mixed");
  at::Tensor flat = at::cat(c10::fmap(tensors, [](const at::Tensor& t) { return t.reshape({-1}); }));
  tsr_dtype_t dtype = tesseraDtype(flat, "allreduce_coalesced");
  tsr_op_t op = tesseraOp(opts.reduceOp);
  std::vector<at::Tensor> outputs = tensors;
  return launch(
      c10d::OpType::ALLREDUCE_COALESCED, opts.timeout, placementOf(tensors, "allreduce_coalesced"), outputs,
      "allreduce_coalesced of " + describe(flat),
      [&](tsr_request_t* r) {
        return tsr_allreduce(comm_, flat.data_ptr(), flat.data_ptr(), flat.numel(), dtype, op, r);
      },
      [flat, outputs]() mutable {
        int64_t at = 0;
        for (auto& t : outputs) {
          t.view({-1}).copy_(flat.narrow(0, at, t.numel()));
          at += t.numel();
        }
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::broadcast(std::vector<at::Tensor>& tensors,
                                                              const c10d::BroadcastOptions& opts) {
  TORCH_CHECK(tensors.size() == 1, "tessera: broadcast takes one tensor per call, not ", tensors.size());
  TensorCopies copies;
  at::Tensor t = copies.conform(tensors[0], TensorCopies::kInPlace);
  tsr_dtype_t dtype = tesseraDtype(t, "broadcast");
  int root = static_cast<int>(opts.rootRank);
  return launch(c10d::OpType::BROADCAST, opts.timeout, placementOf({t}, "broadcast"), {t},
                "broadcast from rank " + std::to_string(root) + " of " + describe(t), [&](tsr_request_t* r) {
                  return tsr_broadcast(comm_, t.data_ptr(), t.data_ptr(), t.numel(), dtype, root, r);
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::_allgather_base(at::Tensor& givenOutput, at::Tensor& givenInput,
                                                                    const c10d::AllgatherOptions& opts) {
  TensorCopies copies;
  at::Tensor output = copies.conform(givenOutput, TensorCopies::kOutput),
             input = copies.conform(givenInput, TensorCopies::kInput);
  tsr_dtype_t dtype = tesseraDtype(input, "all_gather_into_tensor input");
  tesseraDtype(output, "all_gather_into_tensor output");
  TORCH_CHECK(output.scalar_type() == input.scalar_type() && output.numel() == input.numel() * getSize(),
              "tessera: all_gather_into_tensor: the output is ", describe(output), " where ", getSize(), " x ",
              describe(input), " was expected");
  return launch(
      c10d::OpType::_ALLGATHER_BASE, opts.timeout, placementOf({input, output}, "all_gather_into_tensor"), {output},
      "all_gather_into_tensor of " + describe(input),
      [&](tsr_request_t* r) {
        return tsr_allgather(comm_, input.data_ptr(), output.data_ptr(), input.numel(), dtype, r);
      },
      Kept{{input}});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                              std::vector<at::Tensor>& inputs,
                                                              const c10d::AllgatherOptions& opts) {
  TORCH_CHECK(inputs.size() == 1 && outputs.size() == 1, "tessera: all_gather takes one input tensor per call");
  TensorCopies copies;
  at::Tensor input = copies.conform(inputs[0], TensorCopies::kInput);
  tsr_dtype_t dtype = tesseraDtype(input, "all_gather input");
  std::vector<at::Tensor> list = copies.conform(outputs[0], TensorCopies::kOutput);
  TORCH_CHECK(static_cast<int>(list.size()) == getSize(), "tessera: all_gather: ", list.size(), " output tensors for ",
              getSize(), " ranks");
  checkSame(list, input, "all_gather output");
  std::vector<at::Tensor> all = list;
  all.push_back(input);
  const Placement place = placementOf(all, "all_gather");
  // Gathered into one buffer, then copied into the caller's list once done.
  at::Tensor flat = at::empty({input.numel() * getSize()}, input.options());
  return launch(
      c10d::OpType::ALLGATHER, opts.timeout, place, list, "all_gather of " + describe(input),
      [&](tsr_request_t* r) {
        return tsr_allgather(comm_, input.data_ptr(), flat.data_ptr(), input.numel(), dtype, r);
      },
      [flat, list]() mutable {
        for (size_t i = 0; i < list.size(); ++i)
          list[i].view({-1}).copy_(flat.narrow(0, static_cast<int64_t>(i) * list[i].numel(), list[i].numel()));
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::_reduce_scatter_base(at::Tensor& givenOutput,
                                                                         at::Tensor& givenInput,
                                                                         const c10d::ReduceScatterOptions& opts) {
  TensorCopies copies;
  at::Tensor output = copies.conform(givenOutput, TensorCopies::kOutput),
             input = copies.conform(givenInput, TensorCopies::kInput);
  tsr_dtype_t dtype = tesseraDtype(output, "reduce_scatter_tensor output");
  tesseraDtype(input, "reduce_scatter_tensor input");
  TORCH_CHECK(output.scalar_type() == input.scalar_type() && input.numel() == output.numel() * getSize(),
              "tessera: reduce_scatter_tensor: the input is ", describe(input), " where ", getSize(), " x ",
              describe(output), " was expected");
  tsr_op_t op = tesseraOp(copies.reduceOp(opts.reduceOp, "reduce_scatter_tensor"));
  return launch(
      c10d::OpType::_REDUCE_SCATTER_BASE, opts.timeout, placementOf({input, output}, "reduce_scatter_tensor"), {output},
      "reduce_scatter_tensor of " + describe(input),
      [&](tsr_request_t* r) {
        return tsr_reduce_scatter(comm_, input.data_ptr(), output.data_ptr(), output.numel(), dtype, op, r);
      },
      Kept{{input}});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                   std::vector<std::vector<at::Tensor>>& inputs,
                                                                   const c10d::ReduceScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == 1 && inputs.size() == 1, "tessera: reduce_scatter takes one output tensor per call");
  TensorCopies copies;
  at::Tensor output = copies.conform(outputs[0], TensorCopies::kOutput);
  std::vector<at::Tensor> blocks = copies.conform(inputs[0], TensorCopies::kInput);
  tsr_dtype_t dtype = tesseraDtype(output, "reduce_scatter output");
  TORCH_CHECK(static_cast<int>(blocks.size()) == getSize(), "tessera: reduce_scatter: ", blocks.size(),
              " input tensors for ", getSize(), " ranks");
  checkSame(blocks, output, "reduce_scatter input");
  tsr_op_t op = tesseraOp(copies.reduceOp(opts.reduceOp, "reduce_scatter"));
  std::vector<at::Tensor> all = blocks;
  all.push_back(output);
  const Placement place = placementOf(all, "reduce_scatter");
  // The blocks laid end to end, as Tessera takes them.
  at::Tensor flat = at::cat(c10::fmap(blocks, [](const at::Tensor& t) { return t.reshape({-1}); }));
  return launch(
      c10d::OpType::REDUCE_SCATTER, opts.timeout, place, {output}, "reduce_scatter of " + describe(flat),
      [&](tsr_request_t* r) {
        return tsr_reduce_scatter(comm_, flat.data_ptr(), output.data_ptr(), output.numel(), dtype, op, r);
      },
      Kept{{flat}});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::barrier(const c10d::BarrierOptions& opts) {
  return launch(c10d::OpType::BARRIER, opts.timeout, Placement{}, {}, "barrier",
                [&](tsr_request_t* r) { return tsr_barrier(comm_, r); });
}

void ProcessGroupTessera::monitoredBarrier(const c10d::BarrierOptions& opts, bool) {
  auto timeout = opts.timeout.count() > 0 ? opts.timeout : std::chrono::milliseconds(1800 * 1000);
  barrier(opts)->wait(timeout);
}

#if TORCH_VERSION_MAJOR >= 2
void ProcessGroupTessera::abort() {
  if (comm_) tsr_comm_abort(comm_);
}
#endif

}  // namespace tessera_torch
