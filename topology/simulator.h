// Symbolic simulator: runs a Schedule on abstract contributions, no data, no network.
//
// Vocabulary: a contribution is "rank r's input". The state of one block on one rank is a
// count vector: how many times each rank's input is summed into it (0 = absent). Reduce adds
// count vectors, copy replaces them; sends snapshot the state at the start of the step (see
// schedule.h). The semantics checked at the end:
//   allreduce       every rank, every block: each rank's input exactly once
//   reduce-scatter  rank r's block blockOwnedBy(r): each input exactly once
//   all-gather      every rank, every block b: exactly the input of one rank owning b (and the
//                   blocks each rank starts with are its own input alone)
//   broadcast       every rank, every block: the root's input exactly once
// checkMatching proves the wiring: peers in range, no self-sends, every send has exactly one
// matching receive in the same step (same pair, blocks and combine), hence no deadlock and
// sizes that agree; no rank copies into a block it sends in the same step.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "topology/schedule.h"

namespace tsr::topology {

// state[rank][block][contributor] = times that contributor's input is in the block.
using SymbolicState = std::vector<std::vector<std::vector<std::uint16_t>>>;

Status checkMatching(const Schedule& schedule);

// The inputs the collective starts from (see the header comment).
SymbolicState initialState(const Schedule& schedule);

// Runs every step. Fails when a rank sends a block that holds no contribution yet.
Result<SymbolicState> simulate(const Schedule& schedule, SymbolicState state);

// checkMatching + simulate from initialState + the collective's end-state check.
Status verifySchedule(const Schedule& schedule);

}  // namespace tsr::topology
