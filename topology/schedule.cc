#include "topology/schedule.h"

#include <algorithm>
#include <sstream>
#include <utility>

namespace tsr::topology {

const char* collectiveName(Collective collective) {
  switch (collective) {
    case Collective::kAllreduce:
      return "allreduce";
    case Collective::kReduceScatter:
      return "reduce-scatter";
    case Collective::kAllGather:
      return "all-gather";
    case Collective::kBroadcast:
      return "broadcast";
  }
  return "?";
}

int Transfer::numBlocks() const {
  int total = 0;
  for (const BlockRange& range : blocks) total += range.count;
  return total;
}

std::vector<int> expandBlocks(const std::vector<BlockRange>& ranges, int numBlocks) {
  std::vector<int> out;
  if (numBlocks <= 0) return out;
  for (const BlockRange& range : ranges)
    for (int i = 0; i < range.count; ++i) out.push_back(((range.first + i) % numBlocks + numBlocks) % numBlocks);
  return out;
}

void appendRange(std::vector<BlockRange>& ranges, BlockRange range, int numBlocks) {
  if (range.count <= 0) return;
  range.first = ((range.first % numBlocks) + numBlocks) % numBlocks;
  if (!ranges.empty()) {
    BlockRange& last = ranges.back();
    if ((last.first + last.count) % numBlocks == range.first && last.count + range.count <= numBlocks) {
      last.count += range.count;
      return;
    }
  }
  ranges.push_back(range);
}

namespace {

void describeTransfer(std::ostream& out, const char* verb, const Transfer& transfer) {
  out << verb << ' ' << transfer.peer << " [";
  for (std::size_t i = 0; i < transfer.blocks.size(); ++i)
    out << (i ? "," : "") << transfer.blocks[i].first << '+' << transfer.blocks[i].count;
  out << "] " << (transfer.combine == Combine::kReduce ? "reduce" : "copy");
}

}  // namespace

std::string describe(const Schedule& schedule) {
  std::ostringstream out;
  out << schedule.name << ": " << collectiveName(schedule.collective) << ", " << schedule.numRanks << " ranks, "
      << schedule.numBlocks << " blocks, " << schedule.numSteps() << " steps\n";
  for (int r = 0; r < schedule.numRanks; ++r) {
    for (int s = 0; s < schedule.numSteps(); ++s) {
      const Step& step = schedule.steps[r][s];
      if (step.empty()) continue;
      out << "r" << r << " s" << s << ": ";
      const char* separator = "";
      for (const Transfer& t : step.sends) describeTransfer(out << std::exchange(separator, "; "), "send", t);
      for (const Transfer& t : step.recvs) describeTransfer(out << std::exchange(separator, "; "), "recv", t);
      out << '\n';
    }
  }
  return out.str();
}

std::vector<long> blocksSentPerRank(const Schedule& schedule) {
  std::vector<long> sent(schedule.numRanks, 0);
  for (int r = 0; r < schedule.numRanks; ++r)
    for (const Step& step : schedule.steps[r])
      for (const Transfer& t : step.sends) sent[r] += t.numBlocks();
  return sent;
}

ScheduleBuilder::ScheduleBuilder(std::string name, Collective collective, int numRanks, int numBlocks) {
  schedule_.name = std::move(name);
  schedule_.collective = collective;
  schedule_.numRanks = numRanks;
  schedule_.numBlocks = numBlocks;
  schedule_.steps.resize(std::max(numRanks, 0));
}

void ScheduleBuilder::grow(int steps) {
  if (steps <= grown_) return;
  grown_ = steps;
  for (auto& perRank : schedule_.steps)
    if (static_cast<int>(perRank.size()) < steps) perRank.resize(steps);
}

void ScheduleBuilder::transfer(int step, int from, int to, std::vector<BlockRange> blocks, Combine combine) {
  grow(step + 1);
  Transfer send{to, blocks, combine};
  Transfer recv{from, std::move(blocks), combine};
  schedule_.steps[from][step].sends.push_back(std::move(send));
  schedule_.steps[to][step].recvs.push_back(std::move(recv));
}

int ScheduleBuilder::numSteps() const {
  int steps = 0;
  for (const auto& perRank : schedule_.steps) steps = std::max(steps, static_cast<int>(perRank.size()));
  return steps;
}

Schedule ScheduleBuilder::finish() {
  grow(numSteps());
  for (const auto& perRank : schedule_.steps)
    for (const Step& step : perRank)
      for (const Transfer& t : step.sends)
        schedule_.largestTransferBlocks = std::max(schedule_.largestTransferBlocks, t.numBlocks());
  return std::move(schedule_);
}

}  // namespace tsr::topology
