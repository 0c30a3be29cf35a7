#include "topology/ring_schedule.h"

#include <numeric>

namespace tsr::topology {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

std::vector<Piece> blockPerRank(const std::vector<int>& order) {
  std::vector<Piece> pieces;
  for (int rank : order) pieces.push_back({BlockRange{rank, 1}});
  return pieces;
}

}  // namespace

int appendRingReduceScatter(ScheduleBuilder& builder, int firstStep, const std::vector<int>& ring,
                            const std::vector<Piece>& pieces) {
  int n = static_cast<int>(ring.size());
  for (int s = 0; s + 1 < n; ++s)
    for (int p = 0; p < n; ++p)
      builder.transfer(firstStep + s, ring[p], ring[mod(p + 1, n)], pieces[mod(p - s - 1, n)], Combine::kReduce);
  return n > 1 ? n - 1 : 0;
}

int appendRingAllGather(ScheduleBuilder& builder, int firstStep, const std::vector<int>& ring,
                        const std::vector<Piece>& pieces) {
  int n = static_cast<int>(ring.size());
  for (int s = 0; s + 1 < n; ++s)
    for (int p = 0; p < n; ++p)
      builder.transfer(firstStep + s, ring[p], ring[mod(p + 1, n)], pieces[mod(p - s, n)], Combine::kCopy);
  return n > 1 ? n - 1 : 0;
}

std::vector<int> identityOrder(int n) {
  std::vector<int> order(n > 0 ? n : 0);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

Schedule ringReduceScatter(const std::vector<int>& order) {
  int n = static_cast<int>(order.size());
  ScheduleBuilder builder("ring-reduce-scatter", Collective::kReduceScatter, n, n);
  appendRingReduceScatter(builder, 0, order, blockPerRank(order));
  return builder.finish();
}

Schedule ringAllGather(const std::vector<int>& order) {
  int n = static_cast<int>(order.size());
  ScheduleBuilder builder("ring-all-gather", Collective::kAllGather, n, n);
  appendRingAllGather(builder, 0, order, blockPerRank(order));
  return builder.finish();
}

Schedule ringAllreduce(const std::vector<int>& order) {
  int n = static_cast<int>(order.size());
  ScheduleBuilder builder("ring-allreduce", Collective::kAllreduce, n, n);
  std::vector<Piece> pieces = blockPerRank(order);
  int steps = appendRingReduceScatter(builder, 0, order, pieces);
  appendRingAllGather(builder, steps, order, pieces);
  return builder.finish();
}

}  // namespace tsr::topology
