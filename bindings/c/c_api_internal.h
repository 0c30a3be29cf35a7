// Private to libtessera: the C handles and the error conventions every C entry point shares
// (tessera_c.cc for the core API; one tessera_<feature>.cc file per feature adds its own).
#pragma once

#include <exception>
#include <map>
#include <memory>
#include <string>

#include "base/dtype.h"
#include "bindings/c/comm_life.h"
#include "runtime/communicator.h"
#include "tessera/tessera.h"

struct tsr_comm {
  std::shared_ptr<tsr::capi::CommLife> life;
};
// A request keeps its communicator's life: waited on after tsr_comm_destroy, it reports how
// it ended without driving the destroyed engine.
struct tsr_request {
  tsr::runtime::RequestPtr impl;
  std::shared_ptr<tsr::capi::CommLife> life;
};

namespace tsr::capi {

// The calling thread's last error message (tsr_last_error).
inline thread_local std::string lastError;

// Set while a tsr_request_on_complete callback runs on this thread: the thread that drives
// Tessera (its progress thread, or a caller's driving it), which a wait there would hold up
// for good, heartbeats and timeouts included.
inline thread_local bool inCompletionCallback = false;

inline tsr_status_t report(const tsr::Status& st) {
  // NotSupported is no failure inside the runtime (the next algorithm is tried), but a C
  // caller that gets it back needs to know why.
  if (!st.isOk() && st.code() != tsr::Code::kInProgress) lastError = st.toString();
  return static_cast<tsr_status_t>(st.code());
}

inline tsr_status_t invalid(const std::string& message) {
  lastError = std::string("TSR_ERR_INVALID_ARGUMENT: ") + message;
  return TSR_ERR_INVALID_ARGUMENT;
}

// A tsr_dtype_t or tsr_op_t from C may hold any int: checked as that, before it narrows to the
// runtime's one-byte enums (where 256 would read as TSR_FLOAT32). TSR_OK, or the error.
inline tsr_status_t checkDtype(const std::string& who, tsr_dtype_t dtype) {
  if (tsr::isValidDataType(static_cast<int>(dtype))) return TSR_OK;
  return invalid(who + ": dtype " + std::to_string(static_cast<int>(dtype)) + " is not a tsr_dtype_t");
}
inline tsr_status_t checkOp(const std::string& who, tsr_op_t op) {
  if (tsr::isValidReduceOp(static_cast<int>(op))) return TSR_OK;
  return invalid(who + ": op " + std::to_string(static_cast<int>(op)) + " is not a tsr_op_t");
}

// The largest element count a call takes (2^40, as the dense collectives): past it a size in
// bytes may not fit, and a count that large is a negative number or garbage cast to size_t.
inline constexpr size_t kMaxCount = size_t{1} << 40;
inline tsr_status_t checkCount(const std::string& who, const std::string& what, size_t count) {
  if (count <= kMaxCount) return TSR_OK;
  return invalid(who + ": " + what + " " + std::to_string(count) + " is too large (at most 2^40; a negative " +
                 "number cast to size_t?)");
}
// Bucket element counts of SelSync and COVAP: each 1..2^40.
inline tsr_status_t checkBucketCounts(const std::string& who, const size_t* counts, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (counts[i] == 0) return invalid(who + ": bucket " + std::to_string(i) + " has 0 elements");
    if (tsr_status_t st = checkCount(who, "bucket " + std::to_string(i) + " count", counts[i]); st != TSR_OK) return st;
  }
  return TSR_OK;
}
// tsr_param_t[] as key -> value; a NULL key or value, or a key given twice (which would have
// the last one win unseen), is refused naming the param.
inline tsr_status_t readParams(const std::string& who, const tsr_param_t* params, size_t nparams,
                               std::map<std::string, std::string>& out) {
  if (nparams && !params) return invalid(who + ": params is NULL with nparams " + std::to_string(nparams));
  for (size_t i = 0; i < nparams; ++i) {
    if (!params[i].key || !params[i].value)
      return invalid(who + ": param " + std::to_string(i) + " has a NULL key or value");
    auto [at, added] = out.emplace(params[i].key, params[i].value);
    if (!added)
      return invalid(who + ": param " + std::to_string(i) + ": key '" + at->first + "' is given twice ('" + at->second +
                     "', then '" + params[i].value + "')");
  }
  return TSR_OK;
}
// A call that waits (a collective or message without a request, split, shrink, grow,
// finalize, destroy, a step) in a completion callback would wait for the very thread it holds
// up, for good (the timeouts stop with it; a destroy there used to abort the process): refused
// before anything is posted, saying so. TSR_OK outside a callback.
inline tsr_status_t refuseWaitInCallback(const std::string& fn) {
  if (!inCompletionCallback) return TSR_OK;
  return invalid(fn +
                 ": a blocking call in a tsr_request_on_complete callback; the callback runs on the thread that "
                 "drives Tessera, so it could never finish (post it with a request, or call it on a thread of your "
                 "own)");
}

template <typename F>
inline tsr_status_t guarded(const char* what, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    lastError = std::string("TSR_ERR_INTERNAL: ") + what + ": " + e.what();
  } catch (...) {
    lastError = std::string("TSR_ERR_INTERNAL: ") + what + ": unknown exception";
  }
  return TSR_ERR_INTERNAL;
}

// A handle used after its communicator was destroyed.
inline tsr_status_t destroyed(const std::string& what) {
  lastError =
      "TSR_ERR_ABORTED: " + what + ": the communicator was destroyed (tsr_comm_destroy); this handle can only be freed";
  return TSR_ERR_ABORTED;
}

// Runs body(comm) while the communicator lives (CommLife::with), else reports `what` was
// used after tsr_comm_destroy.
template <typename F>
inline tsr_status_t withLiveComm(CommLife& life, const std::string& what, F&& body) {
  return life.with([&](tsr::runtime::Communicator* comm) -> tsr_status_t {
    if (!comm) return destroyed(what);
    return body(*comm);
  });
}

// Blocking when request is NULL (called inside withLiveComm, so the engine it drives lives
// until the wait ends); otherwise hands the request out.
inline tsr_status_t finish(tsr::Result<tsr::runtime::RequestPtr> posted, tsr_request_t* request,
                           const std::shared_ptr<CommLife>& life) {
  if (!posted.isOk()) return report(posted.status());
  if (request) {
    *request = new tsr_request{posted.take(), life};
    return TSR_OK;
  }
  return report(posted.value()->wait());
}

}  // namespace tsr::capi
