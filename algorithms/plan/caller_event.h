// CallerEvent: a point in the caller's device work, recorded on the calling thread when a
// collective or a tensor step is called (a cudaEvent_t on the caller's stream, as
// ncclAllReduce's stream argument marks it): Tessera reads the call's device input only after
// it. Opaque, so the orchestration around it is tested without CUDA; null where no device is
// involved.
#pragma once

#include <memory>

namespace tsr::algorithms {

using CallerEvent = std::shared_ptr<void>;

}  // namespace tsr::algorithms
