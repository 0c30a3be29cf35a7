// The caller's order for a step on device memory: a task that starts only once the caller's
// work queued before the call has finished (the CallerEvent recorded at the call,
// StepKernels::reached), polled on the progress thread and never waited for. A blocking wait
// there (a kernel stream ordered after the caller's, a synchronize) could stall for good: a
// stream the caller holds for an earlier collective (tsr_stream_hold) is released by the very
// thread that would wait. While closed the task sends nothing and waits for no peer, so the
// collective's timeout still ends it, saying what it waits for.
#pragma once

#include <memory>
#include <string>

#include "algorithms/plan/step_kernels.h"
#include "algorithms/plan/task.h"

namespace tsr::algorithms {

// `inner`, built and started once `kernels` report `event` reached; `what` names the step in
// messages ("marsit tensor w").
TaskFactory afterCallerEvent(TaskFactory inner, std::shared_ptr<StepKernels> kernels, CallerEvent event,
                             std::string what);

}  // namespace tsr::algorithms
