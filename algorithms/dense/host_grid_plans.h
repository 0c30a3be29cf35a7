// Building blocks of two-level (hierarchical) schedules on a host grid: grid[row][col] = rank,
// a row being one host's ranks (X = ranks per host), a column the ranks at the same local
// position of every host (Y = hosts). Two-level Marsit (algorithms/marsit/hier_plan.h) and the
// two-level compressed tensor (algorithms/compressed) share them:
//   * placeInGrid: where this rank sits, its row and its column, or why the grid is unusable;
//   * rowAverageScatterPlan: the host's ranks average a vector (any floating type) over the
//     row ring, position c ending with row block c;
//   * groupAllgatherPlan: an all-gather over any group (a row, a column) of equal blocks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algorithms/dense/dense_plans.h"

namespace tsr::algorithms {

struct GridPlace {
  int row = -1, col = -1;
  int x = 0, y = 0;              // ranks per row (host), rows (hosts)
  std::vector<int> rowRanks;     // grid[row], in ring order
  std::vector<int> columnRanks;  // grid[r][col] for every row r
};

// InvalidArgument, its message starting with `who`, when rows differ in length or the grid
// does not hold every rank 0..size-1 exactly once.
Result<GridPlace> placeInGrid(const std::vector<std::vector<int>>& grid, int rank, int size, const std::string& who);

// Reduce-scatter with average over the row, in place in the output slot (the plan first copies
// its input there): `padded` elements of `dtype`, a multiple of X; position c ends with block
// c (padded / X elements at c * padded / X) averaged over the row. `size` is the job's size
// (it bounds the message ids).
Result<std::shared_ptr<Plan>> rowAverageScatterPlan(int rank, int size, const GridPlace& place, size_t padded,
                                                    DataType dtype, const DenseOptions& options,
                                                    const std::string& algorithm);

// All-gather over `members` (ring order = position): the input holds this rank's block of
// `block` elements; the output gets members.size() blocks, position p's at p * block.
Result<std::shared_ptr<Plan>> groupAllgatherPlan(int rank, int size, const std::vector<int>& members, size_t block,
                                                 DataType dtype, const DenseOptions& options,
                                                 const std::string& algorithm);

}  // namespace tsr::algorithms
