#include "topology/recursive_schedule.h"

#include <algorithm>
#include <utility>

namespace tsr::topology {

bool isPowerOfTwo(int n) { return n > 0 && (n & (n - 1)) == 0; }

int ceilLog2(int n) {
  int log = 0;
  while ((1 << log) < n) ++log;
  return log;
}

Schedule rabenseifnerAllreduce(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  if (n < 1) p = 0;
  int extra = n - p;
  ScheduleBuilder builder("rabenseifner-allreduce", Collective::kAllreduce, n, p);
  if (n <= 1) return builder.finish();

  auto realRank = [&](int v) { return v < extra ? 2 * v + 1 : v + extra; };
  int step = 0;
  if (extra > 0) {
    for (int i = 0; i < extra; ++i) builder.transfer(step, 2 * i, 2 * i + 1, {BlockRange{0, p}}, Combine::kReduce);
    ++step;
  }
  // ranges[v] is the range virtual rank v holds; history keeps it per level for the way back.
  std::vector<BlockRange> ranges(p, BlockRange{0, p});
  std::vector<std::vector<BlockRange>> history;
  for (int mask = p / 2; mask >= 1; mask /= 2) {
    history.push_back(ranges);
    std::vector<BlockRange> next = ranges;
    for (int v = 0; v < p; ++v) {
      const BlockRange& r = ranges[v];
      int half = r.count / 2;
      BlockRange lower{r.first, half}, upper{r.first + half, r.count - half};
      bool low = (v & mask) == 0;
      builder.transfer(step, realRank(v), realRank(v ^ mask), {low ? upper : lower}, Combine::kReduce);
      next[v] = low ? lower : upper;
    }
    ranges = std::move(next);
    ++step;
  }
  for (int mask = 1, level = static_cast<int>(history.size()) - 1; mask < p; mask *= 2, --level) {
    for (int v = 0; v < p; ++v) builder.transfer(step, realRank(v), realRank(v ^ mask), {ranges[v]}, Combine::kCopy);
    ranges = history[level];
    ++step;
  }
  if (extra > 0) {
    for (int i = 0; i < extra; ++i) builder.transfer(step, 2 * i + 1, 2 * i, {BlockRange{0, p}}, Combine::kCopy);
  }
  return builder.finish();
}

Schedule recursiveDoublingAllreduce(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  int extra = n - p;
  ScheduleBuilder builder("recursive-doubling-allreduce", Collective::kAllreduce, n, 1);
  if (n <= 1) return builder.finish();
  auto realRank = [&](int v) { return v < extra ? 2 * v + 1 : v + extra; };
  int step = 0;
  if (extra > 0) {
    for (int i = 0; i < extra; ++i) builder.transfer(step, 2 * i, 2 * i + 1, {BlockRange{0, 1}}, Combine::kReduce);
    ++step;
  }
  for (int mask = 1; mask < p; mask *= 2, ++step)
    for (int v = 0; v < p; ++v)
      builder.transfer(step, realRank(v), realRank(v ^ mask), {BlockRange{0, 1}}, Combine::kReduce);
  for (int i = 0; i < extra; ++i) builder.transfer(step, 2 * i + 1, 2 * i, {BlockRange{0, 1}}, Combine::kCopy);
  return builder.finish();
}

int appendRecursiveDoublingAllreduce(ScheduleBuilder& builder, int firstStep, const std::vector<int>& group,
                                     const std::vector<BlockRange>& blocks) {
  int n = static_cast<int>(group.size());
  int step = 0;
  for (int mask = 1; mask < n; mask *= 2, ++step)
    for (int i = 0; i < n; ++i) builder.transfer(firstStep + step, group[i], group[i ^ mask], blocks, Combine::kReduce);
  return step;
}

}  // namespace tsr::topology
