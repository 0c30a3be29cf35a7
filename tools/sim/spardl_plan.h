// SparDL's step as a plan the replay can run: the runtime's own schedule
// (topology/spardl_schedule.h: Spar-Reduce-Scatter in the teams, R-SAG's recursive doubling
// across them, the Bruck all-gather) with the runtime's message sizes (algorithms/spardl/
// sparse_wire.h). Every bag is full: before a block is sent the runtime re-selects its k_b =
// ceil(density * block) largest magnitudes from a block that is dense (this rank's gradient
// plus residual, plus what arrived), so with a dense gradient each block carries exactly k_b
// entries. The plan is in f32 words (the wire format's fields are all 4 bytes):
//  * a send per transfer, message id = the step, after the step before it has merged;
//  * before it, selecting its dirty blocks: a pass over their elements, priced as a reduce
//    (tsr-kernel-bench here: top-k 0.57-0.65x a memcpy, the f32 sum 0.7-1x);
//  * a receive per transfer, then merging (a reduce) or copying its k_b entries a block;
//  * at the start a pass over the buffer (gradient plus residual), at the end a selection of
//    every block still dirty and a pass writing the result.
// The runtime sends these messages itself, not through the plan executor: no argument header.
// B-SAG (a team count that is not a power of two) is not modelled. Pure: no SimGrid.
#pragma once

#include <memory>

#include "algorithms/plan/plan.h"
#include "base/status.h"
#include "topology/schedule.h"

namespace tsr::sim {

// Rank `rank`'s plan for a buffer of `count` f32 elements at `density`, from the job's
// schedule (built once for all ranks: topology::sparRSagAllreduce).
Result<std::shared_ptr<algorithms::Plan>> spardlPlan(const topology::Schedule& schedule, int rank, size_t count,
                                                     double density);

}  // namespace tsr::sim
