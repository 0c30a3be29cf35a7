// ProcessGroupTessera's coalesced collectives of PyTorch 2.x, which FSDP2 runs once per layer
// group: N all_gather_into_tensor (or reduce_scatter_tensor) calls as one Tessera collective
// over the tensors laid end to end, then each result copied to its own output. One collective
// instead of N keeps the per-call latency (a ring's 2(N-1) steps) to once per group.
#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <c10/util/Exception.h>

#include "bindings/torch/process_group_tessera.h"
#include "bindings/torch/work_tessera.h"

namespace tessera_torch {
namespace {

// Each output (allgather) or input (reduce-scatter) holds `size` blocks of its partner's numel.
void checkPairs(const std::vector<at::Tensor>& small, const std::vector<at::Tensor>& large, int size,
                const char* what) {
  TORCH_CHECK(!small.empty() && small.size() == large.size(), "tessera: ", what, ": ", small.size(), " and ",
              large.size(), " tensors (one of each per collective, at least one)");
  for (size_t i = 0; i < small.size(); ++i) {
    tesseraDtype(small[i], what);
    tesseraDtype(large[i], what);
    TORCH_CHECK(small[i].scalar_type() == small[0].scalar_type() && large[i].scalar_type() == small[0].scalar_type(),
                "tessera: ", what, ": tensor ", i, " is ", describe(small[i]), " and ", describe(large[i]), " where ",
                c10::toString(small[0].scalar_type()), " was expected");
    TORCH_CHECK(large[i].numel() == small[i].numel() * size, "tessera: ", what, ": tensor ", i, " is ",
                describe(large[i]), " where ", size, " x ", describe(small[i]), " was expected");
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& opts) {
  const char* what = "allgather_into_tensor_coalesced";
  const int size = getSize();
  checkPairs(inputs, outputs, size, what);
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  const Placement place = placementOf(all, what);
  at::Tensor flatIn = at::cat(c10::fmap(inputs, [](const at::Tensor& t) { return t.reshape({-1}); }));
  at::Tensor flatOut = at::empty({flatIn.numel() * size}, flatIn.options());
  tsr_dtype_t dtype = tesseraDtype(flatIn, what);
  std::vector<at::Tensor> outs = outputs;
  return launch(
      c10d::OpType::COALESCED, opts.timeout, place, outs, std::string(what) + " of " + describe(flatIn),
      [&](tsr_request_t* r) {
        return tsr_allgather(comm_, flatIn.data_ptr(), flatOut.data_ptr(), flatIn.numel(), dtype, r);
      },
      // Rank r's block is its inputs end to end: piece i goes to block r of output i.
      [flatIn, flatOut, outs, size]() mutable {
        const int64_t total = flatIn.numel();
        for (int r = 0; r < size; ++r) {
          int64_t at = r * total;
          for (auto& out : outs) {
            const int64_t n = out.numel() / size;
            out.view({-1}).narrow(0, r * n, n).copy_(flatOut.narrow(0, at, n));
            at += n;
          }
        }
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTessera::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  const char* what = "reduce_scatter_tensor_coalesced";
  const int size = getSize();
  checkPairs(outputs, inputs, size, what);
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  const Placement place = placementOf(all, what);
  tsr_op_t op = tesseraOp(opts.reduceOp);
  // Laid out rank by rank: block r is block r of every input, so that reducing block r to
  // rank r gives every output at once.
  std::vector<at::Tensor> pieces;
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int64_t n = outputs[i].numel();
      pieces.push_back(inputs[i].view({-1}).narrow(0, r * n, n));
    }
  at::Tensor flatIn = at::cat(pieces);
  at::Tensor flatOut = at::empty({flatIn.numel() / size}, flatIn.options());
  tsr_dtype_t dtype = tesseraDtype(flatIn, what);
  std::vector<at::Tensor> outs = outputs;
  return launch(
      c10d::OpType::COALESCED, opts.timeout, place, outs, std::string(what) + " of " + describe(flatIn),
      [&](tsr_request_t* r) {
        return tsr_reduce_scatter(comm_, flatIn.data_ptr(), flatOut.data_ptr(), flatOut.numel(), dtype, op, r);
      },
      [flatIn, flatOut, outs]() mutable {
        int64_t at = 0;
        for (auto& out : outs) {
          out.view({-1}).copy_(flatOut.narrow(0, at, out.numel()));
          at += out.numel();
        }
      });
}

}  // namespace tessera_torch
#endif
