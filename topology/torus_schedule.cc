#include "topology/torus_schedule.h"

#include "topology/ring_schedule.h"

namespace tsr::topology {

Result<TorusShape> torusShape(int n) {
  if (n < 4) {
    return Status(Code::kNotSupported,
                  "torus needs X x Y with X, Y >= 2; N=" + std::to_string(n) + " is too small, use the ring");
  }
  int best = 1;
  for (int y = 2; y * y <= n; ++y)
    if (n % y == 0) best = y;
  if (best == 1) {
    return Status(Code::kNotSupported,
                  "N=" + std::to_string(n) + " is prime: no X x Y torus with X, Y >= 2; use the ring");
  }
  return TorusShape{n / best, best, false, "most square factorization of N=" + std::to_string(n)};
}

Result<TorusShape> torusShape(const HostMap& hosts) {
  int numHosts = static_cast<int>(hosts.hosts.size());
  if (numHosts >= 2) {
    int perHost = static_cast<int>(hosts.hosts[0].ranks.size());
    for (const HostInfo& host : hosts.hosts) {
      if (static_cast<int>(host.ranks.size()) != perHost) {
        return Status(Code::kNotSupported, "hosts hold different numbers of ranks (" + hosts.hosts[0].name + ": " +
                                               std::to_string(perHost) + ", " + host.name + ": " +
                                               std::to_string(host.ranks.size()) + "); the torus needs equal hosts");
      }
    }
    if (perHost >= 2)
      return TorusShape{perHost, numHosts, true,
                        std::to_string(numHosts) + " hosts x " + std::to_string(perHost) + " local ranks"};
  }
  return torusShape(hosts.worldSize);
}

std::vector<std::pair<int, int>> torusFactorizations(int n) {
  std::vector<std::pair<int, int>> out;
  for (int x = 1; x <= n; ++x)
    if (n % x == 0) out.emplace_back(x, n / x);
  return out;
}

Result<TorusLayout> torusLayout(const HostMap& hosts, const TorusShape& shape) {
  if (shape.x * shape.y != hosts.worldSize) {
    return Status(Code::kInvalidArgument, "torus " + std::to_string(shape.x) + "x" + std::to_string(shape.y) +
                                              " does not cover " + std::to_string(hosts.worldSize) + " ranks");
  }
  std::vector<int> order = ringOrder(hosts);
  TorusLayout layout{shape.x, shape.y, {}};
  for (int row = 0; row < shape.y; ++row)
    layout.grid.emplace_back(order.begin() + row * shape.x, order.begin() + (row + 1) * shape.x);
  return layout;
}

TorusLayout torusLayout(int x, int y) {
  TorusLayout layout{x, y, {}};
  for (int row = 0; row < y; ++row) {
    layout.grid.emplace_back();
    for (int col = 0; col < x; ++col) layout.grid.back().push_back(row * x + col);
  }
  return layout;
}

Schedule torusAllreduce(const TorusLayout& layout) {
  int x = layout.x, y = layout.y, n = x * y;
  ScheduleBuilder builder("torus-allreduce " + std::to_string(x) + "x" + std::to_string(y), Collective::kAllreduce, n,
                          n);
  std::vector<Piece> stripes;
  for (int col = 0; col < x; ++col) stripes.push_back({BlockRange{col * y, y}});

  int step = 0, used = 0;
  for (int row = 0; row < y; ++row) used = appendRingReduceScatter(builder, step, layout.grid[row], stripes);
  step += used;

  used = 0;
  for (int col = 0; col < x; ++col) {
    std::vector<int> column;
    std::vector<Piece> blocks;
    for (int row = 0; row < y; ++row) {
      column.push_back(layout.grid[row][col]);
      blocks.push_back({BlockRange{col * y + row, 1}});
    }
    int rs = appendRingReduceScatter(builder, step, column, blocks);
    used = rs + appendRingAllGather(builder, step + rs, column, blocks);
  }
  step += used;

  for (int row = 0; row < y; ++row) appendRingAllGather(builder, step, layout.grid[row], stripes);
  return builder.finish();
}

}  // namespace tsr::topology
