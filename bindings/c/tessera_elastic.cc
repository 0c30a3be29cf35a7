// The elastic C API (tessera.h): shrink after a failure, grow by the replacements that asked to
// join, and a replacement's join (docs/elastic.md).
#include "bindings/c/c_api_internal.h"
#include "bindings/c/comm_exit.h"
#include "runtime/communicator.h"

using namespace tsr::capi;
using tsr::runtime::Communicator;

namespace {

// A new communicator's handle, closed at exit like tsr_comm_init's.
tsr_status_t handOut(tsr::Result<std::unique_ptr<Communicator>> made, tsr_comm_t* out) {
  if (!made.isOk()) return report(made.status());
  if (!made.value()) return TSR_OK;
  auto life = std::make_shared<CommLife>(made.take());
  closeAtExit(life);
  *out = new tsr_comm{std::move(life)};
  return TSR_OK;
}

template <typename F>
tsr_status_t onNewComm(tsr_comm_t comm, tsr_comm_t* newcomm, const char* fn, F&& make) {
  if (!newcomm) return invalid(std::string(fn) + ": newcomm is NULL");
  *newcomm = nullptr;
  if (!comm) return invalid(std::string(fn) + ": comm is NULL");
  if (tsr_status_t st = refuseWaitInCallback(fn); st != TSR_OK) return st;
  return withLiveComm(*comm->life, fn, [&](Communicator& c) { return handOut(make(c), newcomm); });
}

}  // namespace

extern "C" {

tsr_status_t tsr_comm_shrink(tsr_comm_t comm, tsr_comm_t* newcomm) {
  return guarded("tsr_comm_shrink", [&] {
    return onNewComm(comm, newcomm, "tsr_comm_shrink", [](Communicator& c) { return c.shrink(); });
  });
}

tsr_status_t tsr_comm_grow(tsr_comm_t comm, tsr_comm_t* newcomm) {
  return guarded("tsr_comm_grow",
                 [&] { return onNewComm(comm, newcomm, "tsr_comm_grow", [](Communicator& c) { return c.grow(); }); });
}

tsr_status_t tsr_comm_recovery_ms(tsr_comm_t comm, double* agreement_ms, double* bootstrap_ms) {
  return guarded("tsr_comm_recovery_ms", [&] {
    if (!agreement_ms || !bootstrap_ms) return invalid("tsr_comm_recovery_ms: agreement_ms or bootstrap_ms is NULL");
    if (!comm) return invalid("tsr_comm_recovery_ms: comm is NULL");
    return withLiveComm(*comm->life, "tsr_comm_recovery_ms", [&](Communicator& c) {
      *agreement_ms = c.recovery().agreementMs;
      *bootstrap_ms = c.recovery().bootstrapMs;
      return TSR_OK;
    });
  });
}

tsr_status_t tsr_comm_join(tsr_comm_t* comm) {
  return guarded("tsr_comm_join", [&] {
    if (!comm) return invalid("tsr_comm_join: comm is NULL");
    *comm = nullptr;
    return handOut(Communicator::joinFromEnvironment(), comm);
  });
}

}  // extern "C"
