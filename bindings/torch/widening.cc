#include "bindings/torch/widening.h"

#include <c10/util/Exception.h>

namespace tessera_torch {
namespace {
thread_local Widening* tCurrent = nullptr;

bool oneByte(const at::Tensor& t) {
  auto s = t.scalar_type();
  return s == at::kByte || s == at::kChar || s == at::kBool;
}
}  // namespace

Widening::Widening() : outer_(tCurrent) { tCurrent = this; }
Widening::~Widening() { tCurrent = outer_; }
Widening* Widening::current() { return tCurrent; }

at::Tensor Widening::widen(const at::Tensor& t, bool output) {
  if (!t.defined() || !oneByte(t)) return t;
  sawBool_ = sawBool_ || t.scalar_type() == at::kBool;
  // Contiguous like the caller's: the checks after (contiguity, placement) see what they would.
  at::Tensor wide = t.to(at::kInt);
  wide_.push_back(wide);
  if (output) outputs_.emplace_back(t, wide);
  return wide;
}

std::vector<at::Tensor> Widening::widen(const std::vector<at::Tensor>& list, bool output) {
  std::vector<at::Tensor> out;
  out.reserve(list.size());
  for (const auto& t : list) out.push_back(widen(t, output));
  return out;
}

c10d::ReduceOp Widening::reduceOp(const c10d::ReduceOp& op, const char* what) const {
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

std::function<void()> Widening::narrowing() const {
  return [outputs = outputs_] {
    for (const auto& [given, wide] : outputs) given.copy_(wide);
  };
}

at::Tensor Widening::original(const at::Tensor& t) const {
  for (const auto& [given, wide] : outputs_)
    if (wide.unsafeGetTensorImpl() == t.unsafeGetTensorImpl()) return given;
  return t;
}

}  // namespace tessera_torch
