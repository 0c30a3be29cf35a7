// The per-tensor allreduce C API (tessera_tensor.h): a dense allreduce, a Marsit tensor
// (algorithms/marsit), a compressor-backed tensor (algorithms/compressed) or a SparDL tensor
// (algorithms/spardl) behind one handle. A handle outlives its communicator safely: after
// tsr_comm_destroy every call but tsr_tensor_destroy reports TSR_ERR_ABORTED.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "algorithms/compressed/compressed_tensor.h"
#include "algorithms/marsit/marsit.h"
#include "algorithms/spardl/spardl.h"
#include "algorithms/team/device_path.h"
#include "base/logging.h"
#include "bindings/c/c_api_internal.h"

using tsr::algorithms::ResultScale;
using tsr::runtime::Communicator;

struct tsr_tensor {
  std::shared_ptr<tsr::capi::CommLife> life;  // the communicator, while it lives
  std::string name;
  bool named = false;  // holds its name on the communicator (CommLife::claimName)
  size_t count = 0;
  tsr::DataType dtype = tsr::DataType::kF32;
  std::string algorithm;
  tsr_op_t result = TSR_AVG;                                      // what a step leaves in data (op=)
  std::unique_ptr<tsr::marsit::MarsitTensor> marsit;              // algorithm=marsit
  std::unique_ptr<tsr::compressed::CompressedTensor> compressed;  // algorithm=compressed
  std::unique_ptr<tsr::spardl::SparDLTensor> spardl;              // algorithm=spardl
  std::atomic<uint64_t> denseSteps{0};
  tsr::runtime::RequestPtr pending;  // dense: the last step posted

  ~tsr_tensor() {
    if (named) life->releaseName(name);
  }
  bool busy() const {  // a compressed step pending (a dense one keeps nothing back)
    return (marsit && marsit->busy()) || (compressed && compressed->busy()) || (spardl && spardl->busy());
  }
};

using namespace tsr::capi;

namespace {

bool isFloating(tsr::DataType t) {
  return t == tsr::DataType::kF32 || t == tsr::DataType::kF64 || t == tsr::DataType::kF16 || t == tsr::DataType::kBF16;
}

tsr_status_t notSupported(const std::string& message) { return report(tsr::Status(tsr::Code::kNotSupported, message)); }

// Builds the algorithm's tensor (kv without memory= and op=) into t.
tsr_status_t buildAlgorithm(tsr_tensor& t, Communicator& comm, const std::string& algorithm,
                            const std::map<std::string, std::string>& kv, bool cuda, const std::string& who) {
  if (algorithm == "dense") {
    for (const auto& [k, v] : kv)
      if (k != "algorithm") return invalid(who + ": " + k + "=" + v + " is not a parameter of algorithm=dense");
    if (cuda)
      return notSupported(who +
                          ": memory=cuda is not offered with algorithm=dense (dense collectives take host "
                          "buffers); use marsit, compressed or spardl, or memory=host");
    if (!isFloating(t.dtype))
      return invalid(who +
                     ": algorithm=dense averages, so it needs a floating dtype (float32, float64, float16 "
                     "or bfloat16), not " +
                     tsr::dataTypeName(t.dtype));
    t.algorithm = "dense";
    return TSR_OK;
  }
  if (algorithm != "marsit" && algorithm != "compressed" && algorithm != "spardl")
    return invalid(who + ": algorithm=" + algorithm + " is not accepted (dense, marsit, compressed or spardl)");
  if (t.dtype != tsr::DataType::kF32)
    return notSupported(who + ": algorithm=" + algorithm + " takes TSR_FLOAT32 (float32) only, not " +
                        tsr::dataTypeName(t.dtype) + "; algorithm=dense takes any floating dtype");
  auto made = [&](auto result, auto& slot) -> tsr_status_t {
    if (!result.isOk()) return report(result.status());
    slot = result.take();
    t.algorithm = slot->algorithm();
    return TSR_OK;
  };
  if (algorithm == "marsit") return made(tsr::marsit::MarsitTensor::create(comm, t.name, t.count, kv), t.marsit);
  if (algorithm == "compressed")
    return made(tsr::compressed::CompressedTensor::create(comm, t.name, t.count, kv), t.compressed);
  return made(tsr::spardl::SparDLTensor::create(comm, t.name, t.count, kv), t.spardl);
}

// memory=cuda: Marsit (ring, torus) and flat compressed tensors may take the direct device
// path; SparDL stages (device_path.h).
tsr_status_t placeOnDevice(tsr_tensor& t, Communicator& comm) {
  tsr::algorithms::DeviceOpeners open = tsr::algorithms::cudaDeviceOpeners(t.name, t.count);
  auto prefixed = [](const tsr::Status& st) { return tsr::Status(st.code(), "tsr_tensor_create: " + st.message()); };
  if (t.marsit || t.compressed) {
    auto placed = t.marsit ? t.marsit->useDeviceMemory(open) : t.compressed->useDeviceMemory(open);
    if (!placed.isOk()) return report(prefixed(placed.status()));
    // Device buffers go to UCX: whichever thread drives it needs this device's context.
    if (comm.transportMovesCuda()) comm.bindTransportThreads(tsr::algorithms::cudaThreadBinding());
    return TSR_OK;
  }
  auto staging = open.staging();
  if (!staging.isOk()) return report(prefixed(staging.status()));
  tsr::Status set = t.spardl->setStaging(staging.value());
  if (!set.isOk()) return report(set);
  const bool moves = comm.transportMovesCuda();
  const std::string noDirect = "algorithm=spardl has no device step";
  tsr::log::get("runtime")->info(
      "tensor {}: memory=cuda on {}: {}", t.name, staging.value()->copier().describe(),
      tsr::algorithms::devicePathNote(tsr::algorithms::chooseDevicePath(moves, noDirect), moves, noDirect));
  return TSR_OK;
}

// op=avg|sum: SparDL computes the sum, the others the average; the other kind is scaled by the
// ranks inside the step (algorithms/team/result_scale.h), dense reduces with TSR_SUM instead.
tsr_status_t applyOp(tsr_tensor& t, const std::string& op, const std::string& who) {
  const tsr_op_t native = t.spardl ? TSR_SUM : TSR_AVG;
  t.result = op.empty() ? native : op == "sum" ? TSR_SUM : TSR_AVG;
  if (t.result == native || t.algorithm == "dense") return TSR_OK;
  const ResultScale scale = native == TSR_SUM ? ResultScale::kOverRanks : ResultScale::kTimesRanks;
  tsr::Status st = t.marsit       ? t.marsit->setResultScale(scale)
                   : t.compressed ? t.compressed->setResultScale(scale)
                                  : t.spardl->setResultScale(scale);
  if (!st.isOk()) return report(tsr::Status(st.code(), who + ": op=" + op + ": " + st.message()));
  return TSR_OK;
}

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
    if (nparams && !params) return invalid(who + ": params is NULL with nparams " + std::to_string(nparams));
    if (dtype < TSR_FLOAT32 || dtype > TSR_INT64)
      return invalid(who + ": dtype " + std::to_string(static_cast<int>(dtype)) + " is not a tsr_dtype_t");
    std::map<std::string, std::string> kv;
    for (size_t i = 0; i < nparams; ++i) {
      if (!params[i].key || !params[i].value)
        return invalid(who + ": param " + std::to_string(i) + " has a NULL key or value");
      kv[params[i].key] = params[i].value;
    }
    // memory=host|cuda: where this tensor's data lives (the caller's gradient buffer). Like a
    // framework tensor's device, it is declared once per tensor, not per communicator.
    bool cuda = false;
    if (auto m = kv.find("memory"); m != kv.end()) {
      if (m->second != "host" && m->second != "cuda")
        return invalid(who + ": memory=" + m->second + " is not accepted (host or cuda)");
      cuda = m->second == "cuda";
      kv.erase(m);
    }
    std::string op;
    if (auto o = kv.find("op"); o != kv.end()) {
      if (o->second != "avg" && o->second != "sum")
        return invalid(who + ": op=" + o->second + " is not accepted (avg or sum)");
      op = o->second;
      kv.erase(o);
    }
    return withLiveComm(*comm->life, who, [&](Communicator& c) {
      auto t = std::make_unique<tsr_tensor>();
      t->life = comm->life;
      t->name = name;
      t->count = count;
      t->dtype = static_cast<tsr::DataType>(dtype);
      if (!comm->life->claimName(t->name))
        return invalid(who +
                       ": a live tensor of this communicator already has that name (two would share "
                       "nothing and misalign residuals silently); destroy it first, or use another name");
      t->named = true;
      const std::string algorithm = kv.count("algorithm") ? kv["algorithm"] : "dense";
      if (tsr_status_t st = buildAlgorithm(*t, c, algorithm, kv, cuda, who); st != TSR_OK) return st;
      if (cuda)
        if (tsr_status_t st = placeOnDevice(*t, c); st != TSR_OK) return st;
      if (tsr_status_t st = applyOp(*t, op, who); st != TSR_OK) return st;
      *tensor = t.release();
      return TSR_OK;
    });
  });
}

tsr_status_t tsr_tensor_allreduce(tsr_tensor_t tensor, void* data, tsr_request_t* request) {
  return guarded("tsr_tensor_allreduce", [&] {
    return onTensor(tensor, "tsr_tensor_allreduce", [&](Communicator& c) {
      if (!data && tensor->count) return invalid("tsr_tensor_allreduce: tensor " + tensor->name + ": data is NULL");
      float* g = static_cast<float*>(data);
      if (tensor->marsit) return finish(tensor->marsit->allreduceAsync(g), request, tensor->life);
      if (tensor->compressed) return finish(tensor->compressed->allreduceAsync(g), request, tensor->life);
      if (tensor->spardl) return finish(tensor->spardl->allreduceAsync(g), request, tensor->life);
      const auto op = tensor->result == TSR_SUM ? tsr::ReduceOp::kSum : tsr::ReduceOp::kAvg;
      auto posted = c.allreduce(data, data, tensor->count, tensor->dtype, op);
      if (posted.isOk()) {
        tensor->pending = posted.value();
        ++tensor->denseSteps;
      }
      return finish(std::move(posted), request, tensor->life);
    });
  });
}

tsr_status_t tsr_tensor_info(tsr_tensor_t tensor, uint64_t* steps, const char** algorithm) {
  return onTensor(tensor, "tsr_tensor_info", [&](Communicator&) {
    if (steps) {
      if (tensor->marsit) {
        *steps = tensor->marsit->step();
      } else if (tensor->compressed) {
        *steps = tensor->compressed->step();
      } else if (tensor->spardl) {
        *steps = tensor->spardl->step();
      } else {
        // A posted dense step counts once it has finished without error.
        uint64_t posted = tensor->denseSteps;
        bool unfinished = tensor->pending && !tensor->pending->test().isOk();
        *steps = posted - (unfinished ? 1 : 0);
      }
    }
    if (algorithm) *algorithm = tensor->algorithm.c_str();
    return TSR_OK;
  });
}

tsr_status_t tsr_tensor_result_kind(tsr_tensor_t tensor, tsr_op_t* op) {
  if (!op) return invalid("tsr_tensor_result_kind: op is NULL");
  return onTensor(tensor, "tsr_tensor_result_kind", [&](Communicator&) {
    *op = tensor->result;
    return TSR_OK;
  });
}

tsr_status_t tsr_tensor_residual(tsr_tensor_t tensor, float* residual) {
  return onTensor(tensor, "tsr_tensor_residual", [&](Communicator&) {
    if (!residual && tensor->count)
      return invalid("tsr_tensor_residual: tensor " + tensor->name + ": residual is NULL");
    if (tensor->busy())
      return invalid("tsr_tensor_residual: tensor " + tensor->name + " has a step pending; wait for it first");
    if (tensor->marsit)
      tensor->marsit->residual(residual);
    else if (tensor->compressed)
      tensor->compressed->residual(residual);
    else if (tensor->spardl)
      std::copy(tensor->spardl->residual().begin(), tensor->spardl->residual().end(), residual);
    else
      std::fill(residual, residual + tensor->count, 0.0f);
    return TSR_OK;
  });
}

tsr_status_t tsr_tensor_set_residual(tsr_tensor_t tensor, const float* residual) {
  return guarded("tsr_tensor_set_residual", [&] {
    return onTensor(tensor, "tsr_tensor_set_residual", [&](Communicator&) {
      const std::string who = "tsr_tensor_set_residual: tensor " + tensor->name;
      if (!residual && tensor->count) return invalid(who + ": residual is NULL");
      if (tensor->busy()) return invalid(who + " has a step pending; wait for it first");
      tsr::Status st;
      if (tensor->marsit)
        st = tensor->marsit->setResidual(residual);
      else if (tensor->compressed)
        st = tensor->compressed->setResidual(residual);
      else if (tensor->spardl)
        st = tensor->spardl->setResidual(residual);
      else if (!std::all_of(residual, residual + tensor->count, [](float v) { return v == 0.0f; }))
        return invalid(who + ": algorithm=dense keeps no residual, so only zeros can be set");
      return st.isOk() ? TSR_OK : report(tsr::Status(st.code(), "tsr_tensor_set_residual: " + st.message()));
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
