// The per-tensor allreduce C API (tessera_tensor.h): a handle to an algorithms::Tensor made by
// name (algorithms/tensors/tensor_registry.h: dense, Marsit, compressed or SparDL). A handle
// outlives its communicator safely: after tsr_comm_destroy every call but tsr_tensor_destroy
// reports TSR_ERR_ABORTED.
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/tensors/tensor_registry.h"
#include "bindings/c/c_api_internal.h"

using tsr::runtime::Communicator;

struct tsr_tensor {
  std::shared_ptr<tsr::capi::CommLife> life;  // the communicator, while it lives
  std::string name;
  bool named = false;  // holds its name on the communicator (CommLife::claimName)
  size_t count = 0;
  tsr::algorithms::TensorSpec spec;  // as created: tsr_tensor_move makes it again
  std::unique_ptr<tsr::algorithms::Tensor> impl;

  ~tsr_tensor() {
    impl.reset();  // before the name is free for another tensor
    if (named) life->releaseName(name);
  }
};

using namespace tsr::capi;

namespace {

// Runs body(comm) for the tensor call `fn` while its communicator lives.
template <typename F>
tsr_status_t onTensor(tsr_tensor_t tensor, const char* fn, F&& body) {
  if (!tensor) return invalid(std::string(fn) + ": tensor is NULL");
  return withLiveComm(*tensor->life, std::string(fn) + ": tensor " + tensor->name, std::forward<F>(body));
}

}  // namespace

extern "C" {

tsr_status_t tsr_tensor_create(tsr_comm_t comm, const char* name, size_t count, tsr_dtype_t dtype,
                               const tsr_param_t* params, size_t nparams, tsr_tensor_t* tensor) {
  return guarded("tsr_tensor_create", [&] {
    if (!comm || !tensor) return invalid("tsr_tensor_create: comm or tensor is NULL");
    *tensor = nullptr;
    if (!name || !*name) return invalid("tsr_tensor_create: the tensor needs a name");
    std::string who = std::string("tsr_tensor_create: tensor ") + name;
    if (tsr_status_t st = checkDtype(who, dtype); st != TSR_OK) return st;
    if (tsr_status_t st = checkCount(who, "count", count); st != TSR_OK) return st;
    tsr::algorithms::TensorSpec spec{name, count, static_cast<tsr::DataType>(dtype), {}};
    if (tsr_status_t st = readParams(who, params, nparams, spec.params); st != TSR_OK) return st;
    return withLiveComm(*comm->life, who, [&](Communicator& c) {
      auto t = std::make_unique<tsr_tensor>();
      t->life = comm->life;
      t->name = name;
      t->count = count;
      if (!comm->life->claimName(t->name))
        return invalid(who +
                       ": a live tensor of this communicator already has that name (two would share "
                       "nothing and misalign residuals silently); destroy it first, or use another name");
      t->named = true;
      t->spec = spec;
      auto made = tsr::algorithms::makeTensor(c, std::move(spec), "tsr_tensor_create");
      if (!made.isOk()) return report(made.status());
      t->impl = made.take();
      *tensor = t.release();
      return TSR_OK;
    });
  });
}

tsr_status_t tsr_tensor_allreduce(tsr_tensor_t tensor, void* data, tsr_request_t* request) {
  return guarded("tsr_tensor_allreduce", [&] {
    return onTensor(tensor, "tsr_tensor_allreduce", [&](Communicator&) {
      if (!data && tensor->count) return invalid("tsr_tensor_allreduce: tensor " + tensor->name + ": data is NULL");
      if (!request)
        if (tsr_status_t st = refuseWaitInCallback("tsr_tensor_allreduce: tensor " + tensor->name); st != TSR_OK)
          return st;
      return finish(tensor->impl->allreduceAsync(data), request, tensor->life);
    });
  });
}

tsr_status_t tsr_tensor_info(tsr_tensor_t tensor, uint64_t* steps, const char** algorithm) {
  return onTensor(tensor, "tsr_tensor_info", [&](Communicator&) {
    if (steps) *steps = tensor->impl->steps();
    if (algorithm) *algorithm = tensor->impl->algorithm().c_str();
    return TSR_OK;
  });
}

tsr_status_t tsr_tensor_algorithm(size_t index, const char** name, const char** family, const char** description,
                                  const char** parameters) {
  const auto& table = tsr::algorithms::tensorAlgorithms();
  if (index >= table.size())
    return invalid("tsr_tensor_algorithm: index " + std::to_string(index) + " is past the last (" +
                   std::to_string(table.size()) + " algorithms)");
  if (name) *name = table[index].name;
  if (family) *family = *table[index].base ? table[index].base : table[index].name;
  if (description) *description = table[index].description;
  if (parameters) *parameters = table[index].parameters;
  return TSR_OK;
}

tsr_status_t tsr_tensor_result_kind(tsr_tensor_t tensor, tsr_op_t* op) {
  if (!op) return invalid("tsr_tensor_result_kind: op is NULL");
  return onTensor(tensor, "tsr_tensor_result_kind", [&](Communicator&) {
    *op = tensor->impl->result() == tsr::ReduceOp::kSum ? TSR_SUM : TSR_AVG;
    return TSR_OK;
  });
}

tsr_status_t tsr_tensor_residual(tsr_tensor_t tensor, float* residual) {
  return onTensor(tensor, "tsr_tensor_residual", [&](Communicator&) {
    if (!residual && tensor->count)
      return invalid("tsr_tensor_residual: tensor " + tensor->name + ": residual is NULL");
    if (tensor->impl->busy())
      return invalid("tsr_tensor_residual: tensor " + tensor->name + " has a step pending; wait for it first");
    tensor->impl->residual(residual);
    return TSR_OK;
  });
}

tsr_status_t tsr_tensor_set_residual(tsr_tensor_t tensor, const float* residual) {
  return guarded("tsr_tensor_set_residual", [&] {
    return onTensor(tensor, "tsr_tensor_set_residual", [&](Communicator&) {
      const std::string who = "tsr_tensor_set_residual: tensor " + tensor->name;
      if (!residual && tensor->count) return invalid(who + ": residual is NULL");
      if (tensor->impl->busy()) return invalid(who + " has a step pending; wait for it first");
      // A step adds the residual to its gradient: a NaN here would refuse every later step.
      for (size_t i = 0; i < tensor->count; ++i)
        if (!std::isfinite(residual[i]))
          return invalid(who + ": residual[" + std::to_string(i) + "] is " + std::to_string(residual[i]) +
                         " (a residual must be finite: each step adds it to the gradient)");
      tsr::Status st = tensor->impl->setResidual(residual);
      return st.isOk() ? TSR_OK : report(tsr::Status(st.code(), "tsr_tensor_set_residual: " + st.message()));
    });
  });
}

tsr_status_t tsr_tensor_move(tsr_tensor_t tensor, tsr_comm_t newcomm) {
  return guarded("tsr_tensor_move", [&] {
    if (!newcomm) return invalid("tsr_tensor_move: newcomm is NULL");
    if (!tensor) return invalid("tsr_tensor_move: tensor is NULL");
    auto oldLife = tensor->life;  // held: its lock is ours until the end, whatever tensor->life becomes
    if (newcomm->life == oldLife) return TSR_OK;
    return withLiveComm(*oldLife, "tsr_tensor_move: tensor " + tensor->name, [&](Communicator&) {
      const std::string who = "tsr_tensor_move: tensor " + tensor->name;
      if (tensor->impl->busy()) return invalid(who + " has a step pending; wait for it first");
      std::vector<float> held(tensor->count);
      tensor->impl->residual(held.data());
      return withLiveComm(*newcomm->life, who + " (the new communicator)", [&](Communicator& next) {
        if (!newcomm->life->claimName(tensor->name))
          return invalid(who + ": a live tensor of the new communicator already has that name");
        auto made = tsr::algorithms::makeTensor(next, tensor->spec, "tsr_tensor_move");
        tsr::Status st = made.isOk() ? made.value()->setResidual(held.data()) : made.status();
        if (!st.isOk()) {
          newcomm->life->releaseName(tensor->name);
          return report(tsr::Status(st.code(), made.isOk() ? "tsr_tensor_move: " + st.message() : st.message()));
        }
        tensor->impl = made.take();
        oldLife->releaseName(tensor->name);
        tensor->life = newcomm->life;
        return TSR_OK;
      });
    });
  });
}

tsr_status_t tsr_tensor_destroy(tsr_tensor_t tensor) {
  return guarded("tsr_tensor_destroy", [&] {
    delete tensor;
    return TSR_OK;
  });
}

}  // extern "C"
