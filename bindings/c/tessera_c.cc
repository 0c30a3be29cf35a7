// The C ABI over tsr::runtime::Communicator. Every entry point catches everything: no C++
// exception crosses into C, and every failure leaves its message in tsr_last_error().
#include "tessera/tessera.h"

#include <exception>
#include <memory>
#include <string>

#include "algorithms/dense/cost_model.h"
#include "bindings/c/c_api_internal.h"
#include "bindings/c/comm_exit.h"
#include "runtime/communicator.h"

namespace {

using namespace tsr::capi;

tsr_status_t initWith(tsr_comm_t* comm, const tsr_param_t* params, size_t nparams) {
  if (!comm) return invalid("tsr_comm_init: comm is NULL");
  *comm = nullptr;
  tsr::runtime::EnvMap env = tsr::runtime::processEnvironment();
  auto config = tsr::runtime::Config::fromEnvironment(env);
  if (!config.isOk()) return report(config.status());
  if (tsr::Status st = tsr::runtime::refuseInitOfAReplacement(config.value(), "tsr_comm_init"); !st.isOk())
    return report(st);
  std::map<std::string, std::string> given;
  if (tsr_status_t st = readParams("tsr_comm_init_config", params, nparams, given); st != TSR_OK) return st;
  tsr::runtime::InitParams pairs;
  for (size_t i = 0; i < nparams; ++i) pairs.emplace_back(params[i].key, params[i].value);  // in the caller's order
  tsr::Status applied = tsr::runtime::applyInitParams(pairs, config.value(), env);
  if (!applied.isOk()) return report(applied);
  auto launch = tsr::runtime::launchInfoFromEnv(env);
  if (!launch.isOk()) return report(launch.status());
  auto created = tsr::runtime::Communicator::create(launch.value(), config.value());
  if (!created.isOk()) return report(created.status());
  auto life = std::make_shared<CommLife>(created.take());
  closeAtExit(life);
  *comm = new tsr_comm{std::move(life)};
  return TSR_OK;
}

using tsr::runtime::Communicator;

// Runs body(communicator) for the C function `fn`: comm NULL is an invalid argument, a
// destroyed one TSR_ERR_ABORTED.
template <typename F>
tsr_status_t onComm(tsr_comm_t comm, const char* fn, F&& body) {
  if (!comm) return invalid(std::string(fn) + ": comm is NULL");
  return withLiveComm(*comm->life, fn, std::forward<F>(body));
}

// onComm for a collective or a message: without a request it blocks, which a completion
// callback may not (refuseWaitInCallback), refused before it is posted.
template <typename F>
tsr_status_t onCommPosting(tsr_comm_t comm, const char* fn, tsr_request_t* request, F&& body) {
  if (comm && !request)
    if (tsr_status_t st = refuseWaitInCallback(fn); st != TSR_OK) return st;
  return onComm(comm, fn, std::forward<F>(body));
}

// Set while tsr_request_on_complete registers: a callback run then, at once, runs on the
// caller's own thread, where a wait is fine.
thread_local bool tRegistering = false;

// tsr_test (block false) or tsr_wait. Once the communicator is destroyed every request has
// ended (the shutdown fails the pending ones), so its status is read without driving.
tsr_status_t settle(tsr_request_t request, bool block) {
  auto body = [&](Communicator* comm) -> tsr_status_t {
    const tsr::runtime::Request& r = *request->impl;
    if (!comm && !r.done()) return destroyed(block ? "tsr_wait" : "tsr_test");
    if (block && inCompletionCallback && !r.done())
      return invalid(
          "tsr_wait: called in a tsr_request_on_complete callback on a request still running; the callback runs "
          "on the thread that drives Tessera, so that request could never finish (wait on a thread of your own)");
    return report(block ? r.wait() : r.test());
  };
  return request->life ? request->life->with(body) : body(nullptr);
}

}  // namespace

extern "C" {

tsr_status_t tsr_comm_init(tsr_comm_t* comm) {
  return guarded("tsr_comm_init", [&] { return initWith(comm, nullptr, 0); });
}

tsr_status_t tsr_comm_init_config(tsr_comm_t* comm, const tsr_param_t* params, size_t nparams) {
  return guarded("tsr_comm_init_config", [&] {
    if (nparams && !params) return invalid("tsr_comm_init_config: params is NULL");
    return initWith(comm, params, nparams);
  });
}

tsr_status_t tsr_comm_destroy(tsr_comm_t comm) {
  return guarded("tsr_comm_destroy", [&] {
    if (!comm) return TSR_OK;
    // It waits for the calls in progress and ends the progress thread: not from a callback.
    if (tsr_status_t st = refuseWaitInCallback("tsr_comm_destroy"); st != TSR_OK) return st;
    comm->life->destroy();
    delete comm;
    return TSR_OK;
  });
}

tsr_status_t tsr_comm_abort(tsr_comm_t comm) {
  return guarded("tsr_comm_abort", [&] {
    return onComm(comm, "tsr_comm_abort", [&](Communicator& c) {
      c.abort("tsr_comm_abort called");
      return TSR_OK;
    });
  });
}

tsr_status_t tsr_comm_revoke(tsr_comm_t comm) {
  return guarded("tsr_comm_revoke", [&] {
    return onComm(comm, "tsr_comm_revoke", [&](Communicator& c) {
      c.revoke();
      return TSR_OK;
    });
  });
}

tsr_status_t tsr_comm_finalize(tsr_comm_t comm) {
  return guarded("tsr_comm_finalize", [&] {
    if (!comm) return invalid("tsr_comm_finalize: comm is NULL");
    if (tsr_status_t st = refuseWaitInCallback("tsr_comm_finalize"); st != TSR_OK) return st;
    // Waits under the shared lock (other threads' calls go on), ends the communicator after.
    tsr_status_t drained =
        withLiveComm(*comm->life, "tsr_comm_finalize", [](Communicator& c) { return report(c.drain()); });
    comm->life->destroy();
    return drained;
  });
}

tsr_status_t tsr_comm_set_timeout(tsr_comm_t comm, int timeoutMs) {
  return guarded("tsr_comm_set_timeout", [&] {
    return onComm(comm, "tsr_comm_set_timeout", [&](Communicator& c) { return report(c.setTimeout(timeoutMs)); });
  });
}

tsr_status_t tsr_comm_timeout(tsr_comm_t comm, int* timeoutMs) {
  return guarded("tsr_comm_timeout", [&] {
    if (!timeoutMs) return invalid("tsr_comm_timeout: timeout_ms is NULL");
    return onComm(comm, "tsr_comm_timeout", [&](Communicator& c) {
      *timeoutMs = c.timeoutMs();
      return TSR_OK;
    });
  });
}

tsr_status_t tsr_send(tsr_comm_t comm, const void* send, size_t count, tsr_dtype_t dtype, int peer, int tag,
                      tsr_request_t* request) {
  return guarded("tsr_send", [&] {
    if (tag < 0) return invalid("tsr_send: tag " + std::to_string(tag) + " is negative");
    if (tsr_status_t st = checkDtype("tsr_send", dtype); st != TSR_OK) return st;
    return onCommPosting(comm, "tsr_send", request, [&](Communicator& c) {
      return finish(c.send(send, count, static_cast<tsr::DataType>(dtype), peer, static_cast<uint32_t>(tag)), request,
                    comm->life);
    });
  });
}

tsr_status_t tsr_recv(tsr_comm_t comm, void* recv, size_t count, tsr_dtype_t dtype, int peer, int tag,
                      tsr_request_t* request) {
  return guarded("tsr_recv", [&] {
    if (tag < 0) return invalid("tsr_recv: tag " + std::to_string(tag) + " is negative");
    if (tsr_status_t st = checkDtype("tsr_recv", dtype); st != TSR_OK) return st;
    return onCommPosting(comm, "tsr_recv", request, [&](Communicator& c) {
      return finish(c.recv(recv, count, static_cast<tsr::DataType>(dtype), peer, static_cast<uint32_t>(tag)), request,
                    comm->life);
    });
  });
}

tsr_status_t tsr_comm_split(tsr_comm_t comm, int color, int key, tsr_comm_t* newcomm) {
  return guarded("tsr_comm_split", [&] {
    if (!newcomm) return invalid("tsr_comm_split: newcomm is NULL");
    *newcomm = nullptr;
    if (color < TSR_COMM_SPLIT_NOCOLOR)
      return invalid("tsr_comm_split: color " + std::to_string(color) +
                     " (a color is >= 0, or TSR_COMM_SPLIT_NOCOLOR)");
    if (comm)
      if (tsr_status_t st = refuseWaitInCallback("tsr_comm_split"); st != TSR_OK) return st;
    return onComm(comm, "tsr_comm_split", [&](Communicator& c) {
      auto made = c.split(color, key);
      if (!made.isOk()) return report(made.status());
      if (!made.value()) return TSR_OK;
      auto life = std::make_shared<CommLife>(made.take());
      closeAtExit(life);
      *newcomm = new tsr_comm{std::move(life)};
      return TSR_OK;
    });
  });
}

tsr_status_t tsr_comm_rank(tsr_comm_t comm, int* rank) {
  if (!rank) return invalid("tsr_comm_rank: rank is NULL");
  return onComm(comm, "tsr_comm_rank", [&](Communicator& c) {
    *rank = c.rank();
    return TSR_OK;
  });
}

tsr_status_t tsr_comm_size(tsr_comm_t comm, int* size) {
  if (!size) return invalid("tsr_comm_size: size is NULL");
  return onComm(comm, "tsr_comm_size", [&](Communicator& c) {
    *size = c.size();
    return TSR_OK;
  });
}

tsr_status_t tsr_comm_local_rank(tsr_comm_t comm, int* localRank) {
  if (!localRank) return invalid("tsr_comm_local_rank: local_rank is NULL");
  return onComm(comm, "tsr_comm_local_rank", [&](Communicator& c) {
    *localRank = c.localRank();
    return TSR_OK;
  });
}

tsr_status_t tsr_comm_bytes_sent(tsr_comm_t comm, uint64_t* bytes) {
  if (!bytes) return invalid("tsr_comm_bytes_sent: bytes is NULL");
  return onComm(comm, "tsr_comm_bytes_sent", [&](Communicator& c) {
    *bytes = c.bytesSent();
    return TSR_OK;
  });
}

tsr_status_t tsr_comm_estimate(tsr_comm_t comm, const char* collective, size_t bytes, double* seconds) {
  if (!collective || !seconds) return invalid("tsr_comm_estimate: collective or seconds is NULL");
  return guarded("tsr_comm_estimate", [&] {
    return onComm(comm, "tsr_comm_estimate", [&](Communicator& c) {
      const std::string what = collective;
      const auto& sel = c.selector();
      std::vector<tsr::algorithms::Candidate> ranked;
      if (what == "allreduce")
        ranked = tsr::algorithms::rankAllreduce(bytes, sel.shape(), sel.links());
      else if (what == "allgather")
        ranked = tsr::algorithms::rankAllgather(bytes, sel.shape(), sel.links());
      else
        return invalid("tsr_comm_estimate: collective \"" + what + "\" is not estimated (allreduce, allgather)");
      *seconds = ranked.empty() ? 0.0 : ranked.front().seconds;
      return TSR_OK;
    });
  });
}

tsr_status_t tsr_comm_set_memory_type(tsr_comm_t comm, tsr_memory_t memory) {
  return guarded("tsr_comm_set_memory_type", [&] {
    return onComm(comm, "tsr_comm_set_memory_type", [&](Communicator& c) {
      int value = static_cast<int>(memory);
      if (value != TSR_MEM_HOST && value != TSR_MEM_CUDA)
        return invalid("tsr_comm_set_memory_type: memory type " + std::to_string(value) +
                       " is neither TSR_MEM_HOST (0) nor TSR_MEM_CUDA (1)");
      return report(c.setBufferMemory(static_cast<tsr::transport::MemoryType>(value)));
    });
  });
}

tsr_status_t tsr_comm_set_stream(tsr_comm_t comm, void* stream) {
  return guarded("tsr_comm_set_stream", [&] {
    return onComm(comm, "tsr_comm_set_stream", [&](Communicator& c) {
      c.setCallerStream(stream);
      return TSR_OK;
    });
  });
}

tsr_status_t tsr_comm_set_thread_buffers(tsr_comm_t comm, tsr_memory_t memory, void* stream) {
  return guarded("tsr_comm_set_thread_buffers", [&] {
    return onComm(comm, "tsr_comm_set_thread_buffers", [&](Communicator& c) {
      int value = static_cast<int>(memory);
      if (value != TSR_MEM_HOST && value != TSR_MEM_CUDA)
        return invalid("tsr_comm_set_thread_buffers: memory type " + std::to_string(value) +
                       " is neither TSR_MEM_HOST (0) nor TSR_MEM_CUDA (1)");
      tsr::Status st = c.setThreadBuffers(static_cast<tsr::transport::MemoryType>(value), stream);
      return st.isOk() ? TSR_OK : report(tsr::Status(st.code(), "tsr_comm_set_thread_buffers: " + st.message()));
    });
  });
}

tsr_status_t tsr_comm_clear_thread_buffers(tsr_comm_t comm) {
  return guarded("tsr_comm_clear_thread_buffers", [&] {
    return onComm(comm, "tsr_comm_clear_thread_buffers", [&](Communicator& c) {
      c.clearThreadBuffers();
      return TSR_OK;
    });
  });
}

tsr_status_t tsr_allreduce(tsr_comm_t comm, const void* send, void* recv, size_t count, tsr_dtype_t dtype, tsr_op_t op,
                           tsr_request_t* request) {
  return guarded("tsr_allreduce", [&] {
    if (tsr_status_t st = checkDtype("tsr_allreduce", dtype); st != TSR_OK) return st;
    if (tsr_status_t st = checkOp("tsr_allreduce", op); st != TSR_OK) return st;
    return onCommPosting(comm, "tsr_allreduce", request, [&](Communicator& c) {
      return finish(c.allreduce(send, recv, count, static_cast<tsr::DataType>(dtype), static_cast<tsr::ReduceOp>(op)),
                    request, comm->life);
    });
  });
}

tsr_status_t tsr_allgather(tsr_comm_t comm, const void* send, void* recv, size_t count, tsr_dtype_t dtype,
                           tsr_request_t* request) {
  return guarded("tsr_allgather", [&] {
    if (tsr_status_t st = checkDtype("tsr_allgather", dtype); st != TSR_OK) return st;
    return onCommPosting(comm, "tsr_allgather", request, [&](Communicator& c) {
      return finish(c.allgather(send, recv, count, static_cast<tsr::DataType>(dtype)), request, comm->life);
    });
  });
}

tsr_status_t tsr_alltoallv(tsr_comm_t comm, const void* send, const size_t* send_counts, const size_t* send_displs,
                           void* recv, const size_t* recv_counts, const size_t* recv_displs, tsr_dtype_t dtype,
                           tsr_request_t* request) {
  return guarded("tsr_alltoallv", [&] {
    if (tsr_status_t st = checkDtype("tsr_alltoallv", dtype); st != TSR_OK) return st;
    // Waits for the agreement on the counts even with a request.
    return onCommPosting(comm, "tsr_alltoallv", nullptr, [&](Communicator& c) {
      return finish(c.alltoallv(send, send_counts, send_displs, recv, recv_counts, recv_displs,
                                static_cast<tsr::DataType>(dtype)),
                    request, comm->life);
    });
  });
}

tsr_status_t tsr_broadcast(tsr_comm_t comm, const void* send, void* recv, size_t count, tsr_dtype_t dtype, int root,
                           tsr_request_t* request) {
  return guarded("tsr_broadcast", [&] {
    if (tsr_status_t st = checkDtype("tsr_broadcast", dtype); st != TSR_OK) return st;
    return onCommPosting(comm, "tsr_broadcast", request, [&](Communicator& c) {
      return finish(c.broadcast(send, recv, count, static_cast<tsr::DataType>(dtype), root), request, comm->life);
    });
  });
}

tsr_status_t tsr_reduce_scatter(tsr_comm_t comm, const void* send, void* recv, size_t recvCount, tsr_dtype_t dtype,
                                tsr_op_t op, tsr_request_t* request) {
  return guarded("tsr_reduce_scatter", [&] {
    if (tsr_status_t st = checkDtype("tsr_reduce_scatter", dtype); st != TSR_OK) return st;
    if (tsr_status_t st = checkOp("tsr_reduce_scatter", op); st != TSR_OK) return st;
    return onCommPosting(comm, "tsr_reduce_scatter", request, [&](Communicator& c) {
      return finish(
          c.reduceScatter(send, recv, recvCount, static_cast<tsr::DataType>(dtype), static_cast<tsr::ReduceOp>(op)),
          request, comm->life);
    });
  });
}

tsr_status_t tsr_barrier(tsr_comm_t comm, tsr_request_t* request) {
  return guarded("tsr_barrier", [&] {
    return onCommPosting(comm, "tsr_barrier", request,
                         [&](Communicator& c) { return finish(c.barrier(), request, comm->life); });
  });
}

tsr_status_t tsr_test(tsr_request_t request) {
  if (!request) return invalid("tsr_test: request is NULL");
  return guarded("tsr_test", [&] { return settle(request, false); });
}

tsr_status_t tsr_wait(tsr_request_t request) {
  if (!request) return invalid("tsr_wait: request is NULL");
  return guarded("tsr_wait", [&] { return settle(request, true); });
}

tsr_status_t tsr_request_on_complete(tsr_request_t request, void (*fn)(void* user, tsr_status_t status), void* user) {
  if (!request || !fn) return invalid("tsr_request_on_complete: request or fn is NULL");
  return guarded("tsr_request_on_complete", [&] {
    // Holds neither the handle nor the communicator: the caller may free the request first.
    struct Registering {
      bool was = tRegistering;
      Registering() { tRegistering = true; }
      ~Registering() { tRegistering = was; }
    } registering;
    request->impl->onComplete([fn, user](const tsr::Status& st) {
      if (!st.isOk()) lastError = st.toString();  // what tsr_last_error() gives inside fn
      struct InCallback {
        bool was = inCompletionCallback;
        InCallback() { inCompletionCallback = was || !tRegistering; }
        ~InCallback() { inCompletionCallback = was; }
      } inCallback;
      fn(user, static_cast<tsr_status_t>(st.code()));
    });
    return TSR_OK;
  });
}

tsr_status_t tsr_request_free(tsr_request_t request) {
  delete request;
  return TSR_OK;
}

tsr_status_t tsr_get_version(int* version) {
  if (!version) return invalid("tsr_get_version: version is NULL");
  *version = TSR_VERSION_CODE;
  return TSR_OK;
}

const char* tsr_status_string(tsr_status_t status) { return tsr::codeName(static_cast<tsr::Code>(status)); }

const char* tsr_last_error(void) { return lastError.c_str(); }

}  // extern "C"
