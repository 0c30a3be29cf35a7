// The caller's order for work on device memory (a tensor step, direct or staged; a staged
// dense collective): a task that starts only once the caller's work queued before the call has
// finished (the CallerEvent recorded at the call), polled on the progress thread and never
// waited for. A blocking wait there (a kernel stream ordered after the caller's, a
// synchronize) could stall for good: a stream the caller holds for an earlier collective
// (tsr_stream_hold) is released by the very thread that would wait. So could a wait queued on
// the device: a copier's stream that waited for the caller's event would hold back every later
// copy on it, the earlier collective's copy back included. While closed the task sends nothing
// and waits for no peer, so the collective's timeout still ends it, saying what it waits for.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "algorithms/plan/caller_event.h"
#include "algorithms/plan/task.h"

namespace tsr::algorithms {

// True once the caller's work up to the event has finished (StepKernels::reached,
// DeviceCopier::reached); never blocks.
using CallerEventPoll = std::function<Result<bool>(const CallerEvent&)>;

// `inner`, built and started once `reached` reports `event` passed; `what` names the step in
// messages ("marsit tensor w").
TaskFactory afterCallerEvent(TaskFactory inner, CallerEventPoll reached, CallerEvent event, std::string what);

}  // namespace tsr::algorithms
