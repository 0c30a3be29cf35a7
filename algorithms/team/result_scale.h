// What a tensor step's result becomes before its request completes (the op= a tensor was
// declared with, when its algorithm computes the other kind): SparDL sums, so op=avg divides
// by the ranks; Marsit, compressed tensors and dense average, so op=sum multiplies by them.
// The scaling runs on the progress thread inside the step, so a waiter or a completion
// callback only ever sees the declared kind.
#pragma once

#include <cstddef>
#include <memory>

#include "algorithms/plan/task.h"

namespace tsr::algorithms {

enum class ResultScale { kNone, kTimesRanks, kOverRanks };

// Scales data[0..count) (host floats) by the team's size once the step built by
// `make` ends without error; kNone returns `make` as it is.
TaskFactory scaleResult(TaskFactory make, float* data, size_t count, ResultScale scale);

}  // namespace tsr::algorithms
