#include "topology/spardl_schedule.h"

#include <algorithm>

#include "topology/bruck_schedule.h"
#include "topology/recursive_schedule.h"

namespace tsr::topology {

BlockRange sparSendBag(int n, int i, int k) {
  int levels = ceilLog2(n);
  int d = 1 << (levels - k);
  return BlockRange{(i + d) % n, std::min(2 * d, n) - d};
}

int appendSparReduceScatter(ScheduleBuilder& builder, int firstStep, const std::vector<int>& group) {
  int n = static_cast<int>(group.size());
  int levels = ceilLog2(n);
  for (int k = 1; k <= levels; ++k) {
    int d = 1 << (levels - k);
    for (int i = 0; i < n; ++i)
      builder.transfer(firstStep + k - 1, group[i], group[(i + d) % n], {sparSendBag(n, i, k)}, Combine::kReduce);
  }
  return n >= 1 ? levels : 0;
}

Schedule sparReduceScatter(int n) {
  ScheduleBuilder builder("spar-reduce-scatter", Collective::kReduceScatter, n, n);
  std::vector<int> group(n);
  for (int i = 0; i < n; ++i) group[i] = i;
  appendSparReduceScatter(builder, 0, group);
  return builder.finish();
}

Result<TeamSplit> teamSplit(const std::vector<int>& order, int numTeams) {
  int n = static_cast<int>(order.size());
  if (numTeams < 1 || numTeams > n || n % numTeams != 0) {
    return Status(Code::kInvalidArgument,
                  "SparDL teams: T=" + std::to_string(numTeams) + " does not divide N=" + std::to_string(n));
  }
  TeamSplit split;
  split.numTeams = numTeams;
  split.teamSize = n / numTeams;
  split.teams.resize(numTeams);
  split.crossGroups.resize(split.teamSize);
  for (int t = 0; t < numTeams; ++t) {
    for (int j = 0; j < split.teamSize; ++j) {
      int rank = order[t * split.teamSize + j];
      split.teams[t].push_back(rank);
      split.crossGroups[j].push_back(rank);
    }
  }
  return split;
}

Result<Schedule> sparRSagAllreduce(const TeamSplit& split) {
  if (!isPowerOfTwo(split.numTeams)) {
    return Status(Code::kNotSupported,
                  "R-SAG needs a power-of-two team count, T=" + std::to_string(split.numTeams) + " (use B-SAG)");
  }
  int n = split.numTeams * split.teamSize, s = split.teamSize;
  ScheduleBuilder builder("spar-rsag-allreduce T=" + std::to_string(split.numTeams), Collective::kAllreduce, n, s);
  int step = 0, used = 0;
  for (const auto& team : split.teams) used = appendSparReduceScatter(builder, step, team);
  step += used;
  for (int j = 0; j < s; ++j)
    used = appendRecursiveDoublingAllreduce(builder, step, split.crossGroups[j], {BlockRange{j, 1}});
  step += used;
  std::vector<Piece> pieces;
  for (int j = 0; j < s; ++j) pieces.push_back({BlockRange{j, 1}});
  for (const auto& team : split.teams) appendBruckAllGather(builder, step, team, pieces);
  return builder.finish();
}

Schedule sparBSagCrossGather(const TeamSplit& split) {
  int n = split.numTeams * split.teamSize, teams = split.numTeams;
  ScheduleBuilder builder("spar-bsag-cross-gather T=" + std::to_string(teams), Collective::kAllGather, n, teams);
  std::vector<int> owned(n, 0);
  for (int t = 0; t < teams; ++t)
    for (int rank : split.teams[t]) owned[rank] = t;
  builder.setOwnedBlocks(owned);
  std::vector<Piece> pieces;
  for (int t = 0; t < teams; ++t) pieces.push_back({BlockRange{t, 1}});
  for (const auto& group : split.crossGroups) appendBruckAllGather(builder, 0, group, pieces);
  return builder.finish();
}

}  // namespace tsr::topology
