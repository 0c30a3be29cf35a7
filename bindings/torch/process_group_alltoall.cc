// ProcessGroupTessera's all-to-all (all_to_all_single and all_to_all, even or uneven) over
// tsr_alltoallv: the ranks agree on every block's size before any data moves, so a pair that
// disagrees raises on every rank naming both (tessera.h).
#include <numeric>

#include <c10/util/Exception.h>

#include "bindings/torch/process_group_tessera.h"
#include "bindings/torch/tensor_copies.h"
#include "bindings/torch/work_tessera.h"

namespace tessera_torch {
namespace {

// Elements per block for `splits` (rows of dim 0; empty: equal blocks), checked against t.
std::vector<size_t> blockCounts(const at::Tensor& t, const std::vector<int64_t>& splits, int size, const char* what) {
  const int64_t rows = t.dim() > 0 ? t.size(0) : 1;
  const int64_t perRow = rows > 0 ? t.numel() / rows : 0;
  std::vector<size_t> counts(size);
  if (splits.empty()) {
    TORCH_CHECK(rows % size == 0, "tessera: all_to_all_single: the ", what, " has ", rows, " rows, which ", size,
                " ranks cannot split evenly (pass its split sizes)");
    for (auto& c : counts) c = static_cast<size_t>(rows / size * perRow);
    return counts;
  }
  TORCH_CHECK(static_cast<int>(splits.size()) == size, "tessera: all_to_all_single: ", splits.size(), " ", what,
              " split sizes for ", size, " ranks");
  int64_t total = 0;
  for (int p = 0; p < size; ++p) {
    TORCH_CHECK(splits[p] >= 0, "tessera: all_to_all_single: ", what, " split ", p, " is ", splits[p]);
    total += splits[p];
    counts[p] = static_cast<size_t>(splits[p] * perRow);
  }
  TORCH_CHECK(total == rows, "tessera: all_to_all_single: the ", what, " split sizes add up to ", total, " rows, the ",
              what, " has ", rows);
  return counts;
}

std::vector<size_t> displacements(const std::vector<size_t>& counts) {
  std::vector<size_t> displs(counts.size(), 0);
  if (!counts.empty()) std::partial_sum(counts.begin(), counts.end() - 1, displs.begin() + 1);
  return displs;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::alltoall_base(at::Tensor& givenOutput, at::Tensor& givenInput,
                                                                  std::vector<int64_t>& outputSplitSizes,
                                                                  std::vector<int64_t>& inputSplitSizes,
                                                                  const c10d::AllToAllOptions& opts) {
  TensorCopies copies;
  at::Tensor output = copies.conform(givenOutput, TensorCopies::kOutput),
             input = copies.conform(givenInput, TensorCopies::kInput);
  tsr_dtype_t dtype = tesseraDtype(input, "all_to_all_single input");
  tesseraDtype(output, "all_to_all_single output");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "tessera: all_to_all_single: the input is ", describe(input),
              " and the output ", describe(output), ": one dtype for both");
  std::vector<size_t> sendCounts = blockCounts(input, inputSplitSizes, getSize(), "input");
  std::vector<size_t> recvCounts = blockCounts(output, outputSplitSizes, getSize(), "output");
  std::vector<size_t> sendDispls = displacements(sendCounts), recvDispls = displacements(recvCounts);
  // Tessera's all-to-all takes host memory: CUDA tensors go through pinned host copies.
  const Placement place = placementOf({input, output}, "all_to_all_single", /*hostStaged=*/true);
  at::Tensor hostIn = hostCopy(input), hostOut = hostBufferLike(output);
  // In place (all_to_all_single(t, t), as gloo takes it): the blocks are sent from a copy, since
  // received ones land in the output while others are still to go.
  if (hostIn.is_alias_of(hostOut)) hostIn = hostIn.clone();
  return launch(
      c10d::OpType::ALLTOALL_BASE, opts.timeout, place, {output}, "all_to_all_single of " + describe(input),
      [&](tsr_request_t* r) {
        return tsr_alltoallv(comm_, hostIn.data_ptr(), sendCounts.data(), sendDispls.data(), hostOut.data_ptr(),
                             recvCounts.data(), recvDispls.data(), dtype, r);
      },
      [hostIn, hostOut, output]() mutable {  // keeps the buffers alive until the collective is done
        if (!hostOut.is_same(output)) output.copy_(hostOut, /*non_blocking=*/true);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::alltoall(std::vector<at::Tensor>& givenOutputs,
                                                             std::vector<at::Tensor>& givenInputs,
                                                             const c10d::AllToAllOptions& opts) {
  TensorCopies copies;
  std::vector<at::Tensor> outputs = copies.conform(givenOutputs, TensorCopies::kOutput),
                          inputs = copies.conform(givenInputs, TensorCopies::kInput);
  const int size = getSize();
  TORCH_CHECK(static_cast<int>(inputs.size()) == size && static_cast<int>(outputs.size()) == size,
              "tessera: all_to_all: ", inputs.size(), " input and ", outputs.size(), " output tensors for ", size,
              " ranks");
  tsr_dtype_t dtype = tesseraDtype(inputs[0], "all_to_all input");
  std::vector<size_t> sendCounts(size), recvCounts(size);
  for (int p = 0; p < size; ++p) {
    tesseraDtype(inputs[p], "all_to_all input");
    tesseraDtype(outputs[p], "all_to_all output");
    TORCH_CHECK(
        inputs[p].scalar_type() == inputs[0].scalar_type() && outputs[p].scalar_type() == inputs[0].scalar_type(),
        "tessera: all_to_all: tensors ", p, " are ", describe(inputs[p]), " and ", describe(outputs[p]), " where ",
        c10::toString(inputs[0].scalar_type()), " was expected");
    sendCounts[p] = static_cast<size_t>(inputs[p].numel());
    recvCounts[p] = static_cast<size_t>(outputs[p].numel());
  }
  std::vector<size_t> sendDispls = displacements(sendCounts), recvDispls = displacements(recvCounts);
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  const Placement place = placementOf(all, "all_to_all", /*hostStaged=*/true);
  // The blocks laid end to end on both sides (in host memory, which Tessera's all-to-all
  // takes), the received ones copied out once done.
  at::Tensor flatIn = hostCopy(at::cat(c10::fmap(inputs, [](const at::Tensor& t) { return t.reshape({-1}); })));
  at::Tensor flatOut = at::empty({static_cast<int64_t>(recvDispls.back() + recvCounts.back())},
                                 flatIn.options().pinned_memory(place.cuda.has_value()));
  std::vector<at::Tensor> outs = outputs;
  return launch(
      c10d::OpType::ALLTOALL, opts.timeout, place, outs, "all_to_all of " + describe(flatIn),
      [&](tsr_request_t* r) {
        return tsr_alltoallv(comm_, flatIn.data_ptr(), sendCounts.data(), sendDispls.data(), flatOut.data_ptr(),
                             recvCounts.data(), recvDispls.data(), dtype, r);
      },
      [flatIn, flatOut, outs, recvDispls]() mutable {
        for (size_t p = 0; p < outs.size(); ++p)
          outs[p].view({-1}).copy_(flatOut.narrow(0, static_cast<int64_t>(recvDispls[p]), outs[p].numel()),
                                   /*non_blocking=*/true);
      });
}

}  // namespace tessera_torch
