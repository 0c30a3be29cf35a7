// Holds on CUDA streams through the C API (tsr_stream_hold / tsr_stream_release in tessera.h),
// over algorithms/team/stream_hold.h.
#include "algorithms/team/stream_hold.h"
#include "bindings/c/c_api_internal.h"

struct tsr_stream_hold_handle {
  tsr::algorithms::StreamHolds* holds;
  tsr::algorithms::StreamHolds::Hold hold;
};

using namespace tsr::capi;

extern "C" {

tsr_status_t tsr_stream_hold(void* stream, tsr_stream_hold_t* hold) {
  return guarded("tsr_stream_hold", [&] {
    if (!hold) return invalid("tsr_stream_hold: hold is NULL");
    *hold = nullptr;
    auto holds = tsr::algorithms::cudaStreamHolds();
    if (!holds.isOk())
      return report(tsr::Status(holds.status().code(), "tsr_stream_hold: " + holds.status().message()));
    auto held = holds.value()->hold(stream);
    if (!held.isOk()) return report(tsr::Status(held.status().code(), "tsr_stream_hold: " + held.status().message()));
    *hold = new tsr_stream_hold_handle{holds.value(), held.value()};
    return TSR_OK;
  });
}

tsr_status_t tsr_stream_release(tsr_stream_hold_t hold) {
  if (!hold) return invalid("tsr_stream_release: hold is NULL");
  hold->holds->release(hold->hold);
  delete hold;
  return TSR_OK;
}

}  // extern "C"
