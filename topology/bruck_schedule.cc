#include "topology/bruck_schedule.h"

#include <algorithm>

namespace tsr::topology {

int appendBruckAllGather(ScheduleBuilder& builder, int firstStep, const std::vector<int>& group,
                         const std::vector<Piece>& pieces) {
  int n = static_cast<int>(group.size());
  int step = 0;
  for (int d = 1; d < n; d *= 2, ++step) {
    int count = std::min(d, n - d);
    for (int p = 0; p < n; ++p) {
      std::vector<BlockRange> blocks;
      for (int i = 0; i < count; ++i)
        for (const BlockRange& range : pieces[(p + i) % n]) blocks.push_back(range);
      builder.transfer(firstStep + step, group[p], group[((p - d) % n + n) % n], std::move(blocks), Combine::kCopy);
    }
  }
  return step;
}

Schedule bruckAllGather(int n) {
  ScheduleBuilder builder("bruck-all-gather", Collective::kAllGather, n, n);
  int step = 0;
  for (int d = 1; d < n; d *= 2, ++step) {
    int count = std::min(d, n - d);
    for (int p = 0; p < n; ++p) {
      std::vector<BlockRange> blocks;
      appendRange(blocks, BlockRange{p, count}, n);
      builder.transfer(step, p, ((p - d) % n + n) % n, std::move(blocks), Combine::kCopy);
    }
  }
  return builder.finish();
}

Schedule binomialBroadcast(int n, int root, int numBlocks) {
  ScheduleBuilder builder("binomial-broadcast", Collective::kBroadcast, n, numBlocks);
  builder.setRoot(root);
  int step = 0;
  for (int mask = 1; mask < n; mask *= 2, ++step)
    for (int v = 0; v < mask && v + mask < n; ++v)
      builder.transfer(step, (v + root) % n, (v + mask + root) % n, {BlockRange{0, numBlocks}}, Combine::kCopy);
  return builder.finish();
}

}  // namespace tsr::topology
