// 2D-torus allreduce: X x Y grid, hosts on one axis, local ranks on the other.
//
// Vocabulary: a row is X ranks (one host's ranks, in locality order); a column is the Y ranks
// at the same position of every row. The buffer is split into N = X*Y blocks; column c's
// "stripe" is blocks [c*Y, (c+1)*Y).
//  1. row reduce-scatter (ring over the row, X-1 steps): position c ends with stripe c summed
//     over its row;
//  2. column allreduce of that stripe (ring over the column, 2(Y-1) steps), block c*Y+j owned
//     by row j: position c of every row now holds stripe c summed over everyone;
//  3. row all-gather of the stripes (X-1 steps).
// Only Y-1 + Y-1 of the 2(X+Y-2) steps cross hosts, and they carry 1/X of the buffer each,
// which is why the torus beats a flat ring when hosts are linked more slowly than ranks inside
// a host.
//
// Shape: with several hosts holding L >= 2 ranks each, X = L and Y = hosts. On one host (or one
// rank per host) the most square factorization X >= Y >= 2 of N; a prime N has none, and
// torusShape says so (NotSupported) so the caller falls back to the ring.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "topology/host_map.h"
#include "topology/schedule.h"

namespace tsr::topology {

struct TorusShape {
  int x = 0;              // ranks per row
  int y = 0;              // rows
  bool hostAxis = false;  // true: each row is one host
  std::string reason;     // why this shape
};

struct TorusLayout {
  int x = 0;
  int y = 0;
  std::vector<std::vector<int>> grid;  // grid[row][column] = rank
};

// Most square X >= Y >= 2 with X*Y == n; NotSupported for n prime or n < 4.
Result<TorusShape> torusShape(int n);
Result<TorusShape> torusShape(const HostMap& hosts);
// Every (X, Y) with X*Y == n and X, Y >= 1 (including the degenerate ones), for tests.
std::vector<std::pair<int, int>> torusFactorizations(int n);

// Rows follow ringOrder(hosts): row j is its j-th chunk of X ranks (a whole host when hostAxis).
Result<TorusLayout> torusLayout(const HostMap& hosts, const TorusShape& shape);
// grid[row][col] = row*X + col.
TorusLayout torusLayout(int x, int y);

Schedule torusAllreduce(const TorusLayout& layout);

}  // namespace tsr::topology
