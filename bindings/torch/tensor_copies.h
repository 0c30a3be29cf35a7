// The copies a call makes of tensors Tessera cannot take as they are, as gloo makes them: a
// non-contiguous tensor (a slice, a transpose, channels_last) goes as a contiguous copy, and a
// 1-byte one (uint8, int8, bool), which Tessera's wire does not carry, as an int32 copy. An
// output's copy goes back into the caller's tensor once the collective is done (the Work's last
// step; launch() adds it), narrowed where it was widened.
//
// Why 1-byte tensors matter: torch moves uint8 tensors in its object collectives
// (broadcast_object_list, all_gather_object, gather_object, scatter_object_list,
// send/recv_object_list, and so DCP and ZeroRedundancyOptimizer), DDP broadcasts bool buffers,
// a trainer all-reduces a bool flag: small tensors, for which four times the bytes cost little.
// A bool reduction is a logical one, as ProcessGroupNCCL's: SUM is MAX (or), PRODUCT is MIN
// (and); uint8 and int8 sums wrap as torch's own arithmetic does.
#pragma once

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

namespace tessera_torch {

class TensorCopies {
 public:
  // The calling thread's until destroyed: launch() takes what it made (current()).
  TensorCopies();
  ~TensorCopies();
  TensorCopies(const TensorCopies&) = delete;
  TensorCopies& operator=(const TensorCopies&) = delete;

  // What the call does with a tensor: reads it, writes it (its copy starts empty), or both.
  enum Use { kInput, kOutput, kInPlace };
  // t itself, or the copy Tessera takes, which goes back into t at the end unless an input.
  // Refuses a call that mixes a 1-byte dtype with another (the copies would hide it).
  at::Tensor conform(const at::Tensor& t, Use use);
  std::vector<at::Tensor> conform(const std::vector<at::Tensor>& list, Use use);
  // The op a bool call reduces with (SUM: MAX, PRODUCT: MIN; AVG refused), else `op` itself.
  c10d::ReduceOp reduceOp(const c10d::ReduceOp& op, const char* what) const;

  static TensorCopies* current();
  bool active() const { return !copies_.empty(); }
  // The last step: every output's copy back into its tensor (holds what it needs).
  std::function<void()> copyingBack() const;
  // The caller's tensor for a copy of an output (else t), and the copies (kept as long as the Work).
  at::Tensor original(const at::Tensor& t) const;
  const std::vector<at::Tensor>& copies() const { return copies_; }

 private:
  std::vector<at::Tensor> copies_;
  std::vector<std::pair<at::Tensor, at::Tensor>> outputs_;  // (the caller's, its copy)
  bool sawBool_ = false;
  std::optional<at::ScalarType> firstType_;
  TensorCopies* outer_;
};

}  // namespace tessera_torch
