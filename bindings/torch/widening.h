// 1-byte tensors (uint8, int8, bool), which Tessera's wire does not carry: a call widens each to
// an int32 copy and narrows the result back into the caller's tensor once the collective is
// done (the narrowing is the Work's last step; launch() adds it). torch moves uint8 tensors in
// its object collectives (broadcast_object_list, all_gather_object, gather_object,
// scatter_object_list, send/recv_object_list, and so DCP and ZeroRedundancyOptimizer), DDP
// broadcasts bool buffers, a trainer all-reduces a bool flag: small tensors, for which four
// times the bytes cost little. A bool reduction is a logical one, as ProcessGroupNCCL's: SUM
// is MAX (or), PRODUCT is MIN (and); uint8 and int8 sums wrap as torch's own arithmetic does.
#pragma once

#include <functional>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

namespace tessera_torch {

class Widening {
 public:
  // The calling thread's until destroyed: launch() takes its narrowing (current()).
  Widening();
  ~Widening();
  Widening(const Widening&) = delete;
  Widening& operator=(const Widening&) = delete;

  // t itself, or an int32 copy of a 1-byte tensor that, when `output`, is narrowed back into t.
  at::Tensor widen(const at::Tensor& t, bool output);
  std::vector<at::Tensor> widen(const std::vector<at::Tensor>& list, bool output);
  // The op a bool call reduces with (SUM: MAX, PRODUCT: MIN; AVG refused), else `op` itself.
  c10d::ReduceOp reduceOp(const c10d::ReduceOp& op, const char* what) const;

  static Widening* current();
  bool active() const { return !wide_.empty(); }
  // The last step: every wide output copied into its tensor (holds what it needs).
  std::function<void()> narrowing() const;
  // The caller's tensor for a wide one (else t), and the wide copies (kept as long as the Work).
  at::Tensor original(const at::Tensor& t) const;
  const std::vector<at::Tensor>& wide() const { return wide_; }

 private:
  std::vector<at::Tensor> wide_;
  std::vector<std::pair<at::Tensor, at::Tensor>> outputs_;  // (the caller's, its wide copy)
  bool sawBool_ = false;
  Widening* outer_;
};

}  // namespace tessera_torch
