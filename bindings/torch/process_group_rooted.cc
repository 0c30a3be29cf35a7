// ProcessGroupTessera's collectives to and from a root: reduce, gather and scatter, built on
// Tessera's allreduce, allgather and broadcast. Every rank then moves what an allreduce,
// allgather or broadcast of the whole moves (reduce: twice a reduce's bytes; gather and
// scatter: N times), where a rooted schedule would move less: enough for the occasional call
// (a metric to rank 0, a sharded checkpoint), not for a training step's hot path.
#include <c10/util/Exception.h>

#include "bindings/torch/process_group_tessera.h"
#include "bindings/torch/tensor_copies.h"
#include "bindings/torch/work_tessera.h"

namespace tessera_torch {
namespace {

int checkedRoot(int64_t root, int size, const char* what) {
  TORCH_CHECK(root >= 0 && root < size, "tessera: ", what, ": root rank ", root, " is not in 0..", size - 1);
  return static_cast<int>(root);
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::reduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::ReduceOptions& opts) {
  TORCH_CHECK(tensors.size() == 1, "tessera: reduce takes one tensor per call, not ", tensors.size());
  const int root = checkedRoot(opts.rootRank, getSize(), "reduce");
  TensorCopies copies;
  at::Tensor t = copies.conform(tensors[0], TensorCopies::kInPlace);
  tsr_dtype_t dtype = tesseraDtype(t, "reduce");
  tsr_op_t op = tesseraOp(copies.reduceOp(opts.reduceOp, "reduce"));
  // The root reduces in place; the others into a copy, so that their tensor stays as it was.
  at::Tensor target = getRank() == root ? t : t.clone();
  return launch(
      c10d::OpType::REDUCE, opts.timeout, placementOf({t}, "reduce"), {t},
      "reduce to rank " + std::to_string(root) + " of " + describe(t),
      [&](tsr_request_t* r) {
        return tsr_allreduce(comm_, target.data_ptr(), target.data_ptr(), target.numel(), dtype, op, r);
      },
      Kept{{target}});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::GatherOptions& opts) {
  TORCH_CHECK(inputs.size() == 1, "tessera: gather takes one input tensor per call, not ", inputs.size());
  const int root = checkedRoot(opts.rootRank, getSize(), "gather");
  TensorCopies copies;
  at::Tensor input = copies.conform(inputs[0], TensorCopies::kInput);
  tsr_dtype_t dtype = tesseraDtype(input, "gather input");
  std::vector<at::Tensor> list;
  if (getRank() == root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(), "tessera: gather: rank ", root,
                " (the root) needs ", getSize(), " output tensors, not ", outputs.empty() ? 0 : outputs[0].size());
    list = copies.conform(outputs[0], TensorCopies::kOutput);
    for (size_t i = 0; i < list.size(); ++i) {
      tesseraDtype(list[i], "gather output");
      TORCH_CHECK(list[i].scalar_type() == input.scalar_type() && list[i].numel() == input.numel(),
                  "tessera: gather: output ", i, " is ", describe(list[i]), " where ", describe(input),
                  " was expected");
    }
  } else {
    TORCH_CHECK(outputs.empty() || outputs[0].empty(), "tessera: gather: rank ", getRank(), " is not the root (rank ",
                root, ") and takes no output tensors");
  }
  std::vector<at::Tensor> all = list;
  all.push_back(input);
  const Placement place = placementOf(all, "gather");
  at::Tensor flat = at::empty({input.numel() * getSize()}, input.options());
  return launch(
      c10d::OpType::GATHER, opts.timeout, place, list,
      "gather to rank " + std::to_string(root) + " of " + describe(input),
      [&](tsr_request_t* r) {
        return tsr_allgather(comm_, input.data_ptr(), flat.data_ptr(), input.numel(), dtype, r);
      },
      [flat, list, input]() mutable {
        for (size_t i = 0; i < list.size(); ++i)
          list[i].view({-1}).copy_(flat.narrow(0, static_cast<int64_t>(i) * input.numel(), input.numel()));
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::scatter(std::vector<at::Tensor>& outputs,
                                                            std::vector<std::vector<at::Tensor>>& inputs,
                                                            const c10d::ScatterOptions& opts) {
  TORCH_CHECK(outputs.size() == 1, "tessera: scatter takes one output tensor per call, not ", outputs.size());
  const int root = checkedRoot(opts.rootRank, getSize(), "scatter");
  TensorCopies copies;
  at::Tensor output = copies.conform(outputs[0], TensorCopies::kOutput);
  std::vector<at::Tensor> blocks =
      inputs.empty() ? std::vector<at::Tensor>{} : copies.conform(inputs[0], TensorCopies::kInput);
  tsr_dtype_t dtype = tesseraDtype(output, "scatter output");
  const int64_t n = output.numel();
  std::vector<at::Tensor> all = {output};
  all.insert(all.end(), blocks.begin(), blocks.end());
  const Placement place = placementOf(all, "scatter");
  // The root's blocks end to end, broadcast; each rank keeps its own block.
  at::Tensor flat;
  if (getRank() == root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(blocks.size()) == getSize(), "tessera: scatter: rank ", root,
                " (the root) needs ", getSize(), " input tensors, not ", blocks.size());
    for (size_t i = 0; i < blocks.size(); ++i) {
      tesseraDtype(blocks[i], "scatter input");
      TORCH_CHECK(blocks[i].scalar_type() == output.scalar_type() && blocks[i].numel() == n, "tessera: scatter: input ",
                  i, " is ", describe(blocks[i]), " where ", describe(output), " was expected");
    }
    flat = at::cat(c10::fmap(blocks, [](const at::Tensor& t) { return t.reshape({-1}); }));
  } else {
    TORCH_CHECK(blocks.empty(), "tessera: scatter: rank ", getRank(), " is not the root (rank ", root,
                ") and takes no input tensors");
    flat = at::empty({n * getSize()}, output.options());
  }
  const int64_t at = getRank() * n;
  return launch(
      c10d::OpType::SCATTER, opts.timeout, place, {output},
      "scatter from rank " + std::to_string(root) + " of " + describe(output),
      [&](tsr_request_t* r) {
        return tsr_broadcast(comm_, flat.data_ptr(), flat.data_ptr(), flat.numel(), dtype, root, r);
      },
      [flat, output, at, n]() mutable { output.view({-1}).copy_(flat.narrow(0, at, n)); });
}

}  // namespace tessera_torch
