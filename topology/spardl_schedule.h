// SparDL schedules (docs/references.md): Spar-Reduce-Scatter bags and the team splits of R-SAG / B-SAG.
//
// Vocabulary (the SparDL paper; docs/compressed.md, "SparDL"): the gradient is split into N blocks, block j meant
// for worker j. L = ceil(log2 N). Worker i keeps block i in its "preservation bag"; its other
// blocks travel in "sending bags". Step k = 1..L uses distance d = 2^(L-k): worker i sends the
// bag of blocks [i+d, i+min(2d, N)) (mod N) to worker i+d and receives the matching bag
// [i, i+min(2d,N)-d) from worker i-d, adding it into blocks it still holds (the algorithm
// re-selects top-k_b in the blocks it sends next). After L steps worker i holds block i summed
// over every worker exactly once: the simulator proves it for N = 1..64. Unlike the ring, this
// takes ceil(log2 N) steps for any N, and unlike recursive halving it needs no fold.
//
// Teams (Spar-All-Gather): the N workers form T teams of S = N/T consecutive ring positions
// (so a team tends to be a host). Worker j of team t is in "cross group" j with worker j of
// every other team. SRS runs inside each team over S blocks; then cross group j combines
// block j across teams: R-SAG by recursive doubling (T a power of two), B-SAG by a Bruck
// all-gather of the T teams' copies (any T), summed locally; then a Bruck all-gather inside the
// team spreads the S blocks.
#pragma once

#include <vector>

#include "base/status.h"
#include "topology/schedule.h"

namespace tsr::topology {

// The bag of blocks worker i sends at step k (1-based) among n workers.
BlockRange sparSendBag(int n, int i, int k);

// Append SRS over `group` (position j ends with block j of a |group|-way split). Steps used.
int appendSparReduceScatter(ScheduleBuilder& builder, int firstStep, const std::vector<int>& group);

// N workers, N blocks, worker i ends with block i.
Schedule sparReduceScatter(int n);

struct TeamSplit {
  int numTeams = 0;
  int teamSize = 0;
  std::vector<std::vector<int>> teams;        // teams[t][j] = rank
  std::vector<std::vector<int>> crossGroups;  // crossGroups[j][t] = rank
};

// Teams of consecutive entries of `order` (e.g. ringOrder). T must divide N.
Result<TeamSplit> teamSplit(const std::vector<int>& order, int numTeams);

// Whole R-SAG data flow as one allreduce schedule over S = N/T blocks: SRS in the teams,
// recursive doubling in the cross groups, Bruck all-gather in the teams. NotSupported when T
// is not a power of two.
Result<Schedule> sparRSagAllreduce(const TeamSplit& split);

// B-SAG's cross-team phase: every cross group runs a Bruck all-gather of T slots, slot t
// holding team t's copy of the group's block (numBlocks = T; rank in team t owns slot t).
Schedule sparBSagCrossGather(const TeamSplit& split);

}  // namespace tsr::topology
