// The per-tensor allreduce C API (tessera_tensor.h): a dense averaging allreduce, a Marsit
// tensor (algorithms/marsit) or a compressor-backed tensor (algorithms/compressed) behind one
// handle.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "algorithms/compressed/compressed_tensor.h"
#include "algorithms/marsit/marsit.h"
#include "algorithms/spardl/spardl.h"
#include "base/logging.h"
#include "bindings/c/c_api_internal.h"
#include "runtime/device_path.h"

struct tsr_tensor {
  tsr::runtime::Communicator* comm = nullptr;
  std::string name;
  size_t count = 0;
  tsr::DataType dtype = tsr::DataType::kF32;
  std::string algorithm;
  std::unique_ptr<tsr::marsit::MarsitTensor> marsit;              // algorithm=marsit
  std::unique_ptr<tsr::compressed::CompressedTensor> compressed;  // algorithm=compressed
  std::unique_ptr<tsr::spardl::SparDLTensor> spardl;              // algorithm=spardl
  std::atomic<uint64_t> denseSteps{0};
  tsr::runtime::RequestPtr pending;                  // dense: the last step posted
};

using namespace tsr::capi;

namespace {

bool isFloating(tsr::DataType t) {
  return t == tsr::DataType::kF32 || t == tsr::DataType::kF64 || t == tsr::DataType::kF16 ||
         t == tsr::DataType::kBF16;
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
    auto t = std::make_unique<tsr_tensor>();
    t->comm = comm->impl.get();
    t->name = name;
    t->count = count;
    t->dtype = static_cast<tsr::DataType>(dtype);
    std::string algorithm = kv.count("algorithm") ? kv["algorithm"] : "dense";
    if (algorithm == "dense") {
      for (const auto& [k, v] : kv)
        if (k != "algorithm") return invalid(who + ": " + k + "=" + v + " is not a parameter of algorithm=dense");
      if (cuda)
        return report(tsr::Status(tsr::Code::kNotSupported,
                                  who + ": memory=cuda is not offered with algorithm=dense (dense collectives take "
                                        "host buffers); use marsit, compressed or spardl, or memory=host"));
      if (!isFloating(t->dtype))
        return invalid(who + ": algorithm=dense averages, so it needs a floating dtype, not " +
                       tsr::dataTypeName(t->dtype));
      t->algorithm = "dense";
    } else if (algorithm == "marsit") {
      if (t->dtype != tsr::DataType::kF32)
        return report(tsr::Status(tsr::Code::kNotSupported, who + ": algorithm=marsit takes TSR_FLOAT32, not " +
                                                                tsr::dataTypeName(t->dtype)));
      auto made = tsr::marsit::MarsitTensor::create(*t->comm, name, count, kv);
      if (!made.isOk()) return report(made.status());
      t->marsit = made.take();
      t->algorithm = t->marsit->algorithm();
    } else if (algorithm == "compressed") {
      if (t->dtype != tsr::DataType::kF32)
        return report(tsr::Status(tsr::Code::kNotSupported, who + ": algorithm=compressed takes TSR_FLOAT32, not " +
                                                                tsr::dataTypeName(t->dtype)));
      auto made = tsr::compressed::CompressedTensor::create(*t->comm, name, count, kv);
      if (!made.isOk()) return report(made.status());
      t->compressed = made.take();
      t->algorithm = t->compressed->algorithm();
    } else if (algorithm == "spardl") {
      if (t->dtype != tsr::DataType::kF32)
        return report(tsr::Status(tsr::Code::kNotSupported, who + ": algorithm=spardl takes TSR_FLOAT32, not " +
                                                                tsr::dataTypeName(t->dtype)));
      auto made = tsr::spardl::SparDLTensor::create(*t->comm, name, count, kv);
      if (!made.isOk()) return report(made.status());
      t->spardl = made.take();
      t->algorithm = t->spardl->algorithm();
    } else {
      return invalid(who + ": algorithm=" + algorithm + " is not accepted (dense, marsit, compressed or spardl)");
    }
    if (cuda) {
      // Marsit (ring, torus) and flat compressed tensors may take the direct device path; SparDL
      // stages (device_path.h).
      tsr::runtime::DeviceOpeners open = tsr::runtime::cudaDeviceOpeners(name, count);
      auto prefixed = [](const tsr::Status& st) { return tsr::Status(st.code(), "tsr_tensor_create: " + st.message()); };
      if (t->marsit || t->compressed) {
        auto placed = t->marsit ? t->marsit->useDeviceMemory(open) : t->compressed->useDeviceMemory(open);
        if (!placed.isOk()) return report(prefixed(placed.status()));
      } else {
        auto staging = open.staging();
        if (!staging.isOk()) return report(prefixed(staging.status()));
        tsr::Status set = t->spardl->setStaging(staging.value());
        if (!set.isOk()) return report(set);
        const bool moves = t->comm->transportMovesCuda();
        const std::string noDirect = "algorithm=" + algorithm + " has no device step";
        tsr::log::get("runtime")->info("tensor {}: memory=cuda on {}: {}", t->name, staging.value()->copier().describe(),
                                       tsr::runtime::devicePathNote(tsr::runtime::chooseDevicePath(moves, noDirect),
                                                                    moves, noDirect));
      }
    }
    *tensor = t.release();
    return TSR_OK;
  });
}

tsr_status_t tsr_tensor_allreduce(tsr_tensor_t tensor, void* data, tsr_request_t* request) {
  return guarded("tsr_tensor_allreduce", [&] {
    if (!tensor) return invalid("tsr_tensor_allreduce: tensor is NULL");
    if (!data && tensor->count) return invalid("tsr_tensor_allreduce: tensor " + tensor->name + ": data is NULL");
    if (tensor->marsit) return finish(tensor->marsit->allreduceAsync(static_cast<float*>(data)), request);
    if (tensor->compressed)
      return finish(tensor->compressed->allreduceAsync(static_cast<float*>(data)), request);
    if (tensor->spardl) return finish(tensor->spardl->allreduceAsync(static_cast<float*>(data)), request);
    auto posted = tensor->comm->allreduce(data, data, tensor->count, tensor->dtype, tsr::ReduceOp::kAvg);
    if (posted.isOk()) {
      tensor->pending = posted.value();
      ++tensor->denseSteps;
    }
    return finish(std::move(posted), request);
  });
}

tsr_status_t tsr_tensor_info(tsr_tensor_t tensor, uint64_t* steps, const char** algorithm) {
  if (!tensor) return invalid("tsr_tensor_info: tensor is NULL");
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
}

tsr_status_t tsr_tensor_residual(tsr_tensor_t tensor, float* residual) {
  if (!tensor || (!residual && tensor->count)) return invalid("tsr_tensor_residual: tensor or residual is NULL");
  bool busy = (tensor->marsit && tensor->marsit->busy()) || (tensor->compressed && tensor->compressed->busy()) ||
              (tensor->spardl && tensor->spardl->busy());
  if (busy) return invalid("tsr_tensor_residual: tensor " + tensor->name + " has a step pending; wait for it first");
  if (tensor->marsit) tensor->marsit->residual(residual);
  else if (tensor->compressed) tensor->compressed->residual(residual);
  else if (tensor->spardl) std::copy(tensor->spardl->residual().begin(), tensor->spardl->residual().end(), residual);
  else std::fill(residual, residual + tensor->count, 0.0f);
  return TSR_OK;
}

tsr_status_t tsr_tensor_destroy(tsr_tensor_t tensor) {
  delete tensor;
  return TSR_OK;
}

}  // extern "C"
