#include "bindings/torch/tensor_copies.h"

#include <c10/util/Exception.h>

namespace tessera_torch {
namespace {
thread_local TensorCopies* tCurrent = nullptr;

bool oneByte(at::ScalarType s) { return s == at::kByte || s == at::kChar || s == at::kBool; }
}  // namespace

TensorCopies::TensorCopies() : outer_(tCurrent) { tCurrent = this; }
TensorCopies::~TensorCopies() { tCurrent = outer_; }
TensorCopies* TensorCopies::current() { return tCurrent; }

at::Tensor TensorCopies::conform(const at::Tensor& t, Use use) {
  if (!t.defined()) return t;
  TORCH_CHECK(t.layout() == c10::kStrided, "tessera: a tensor of layout ", t.layout(),
              ": the tessera backend takes dense (strided) tensors; sparse ones are not supported (.to_dense())");
  const bool widen = oneByte(t.scalar_type());
  if (firstType_ && *firstType_ != t.scalar_type() && (widen || oneByte(*firstType_)))
    TORCH_CHECK(false, "tessera: tensors of ", c10::toString(*firstType_), " and ", c10::toString(t.scalar_type()),
                " in one call: one dtype for all");
  if (!firstType_) firstType_ = t.scalar_type();
  if (!widen && t.is_contiguous()) return t;
  sawBool_ = sawBool_ || t.scalar_type() == at::kBool;
  const at::ScalarType type = widen ? at::kInt : t.scalar_type();
  // An output's copy starts empty: a value copy queued on the caller's stream could land after
  // what the collective writes there from another stream.
  at::Tensor copy = use == kOutput ? at::empty(t.sizes(), t.options().dtype(type))
                                   : t.to(type, /*non_blocking=*/false, /*copy=*/true, at::MemoryFormat::Contiguous);
  copies_.push_back(copy);
  if (use != kInput) outputs_.emplace_back(t, copy);
  return copy;
}

std::vector<at::Tensor> TensorCopies::conform(const std::vector<at::Tensor>& list, Use use) {
  std::vector<at::Tensor> out;
  out.reserve(list.size());
  for (const auto& t : list) out.push_back(conform(t, use));
  return out;
}

c10d::ReduceOp TensorCopies::reduceOp(const c10d::ReduceOp& op, const char* what) const {
  if (!sawBool_) return op;
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return c10d::ReduceOp(c10d::ReduceOp::MAX);
    case c10d::ReduceOp::PRODUCT:
      return c10d::ReduceOp(c10d::ReduceOp::MIN);
    case c10d::ReduceOp::AVG:
      TORCH_CHECK(false, "tessera: ", what, ": AVG of a bool tensor (SUM, PRODUCT, MIN and MAX are logical on bools)");
    default:
      return op;
  }
}

std::function<void()> TensorCopies::copyingBack() const {
  return [outputs = outputs_] {
    for (const auto& [given, copy] : outputs) given.copy_(copy);
  };
}

at::Tensor TensorCopies::original(const at::Tensor& t) const {
  for (const auto& [given, copy] : outputs_)
    if (copy.unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) return given;
  return t;
}

}  // namespace tessera_torch
