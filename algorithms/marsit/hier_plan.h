// Two-level Marsit (BytePS compression's two-level scheme over Marsit's merge): with a grid
// whose rows are hosts (grid[row][col] = rank, X = ranks per host, Y = hosts),
//   1. rowReduceScatter: the ranks of a host average the padded vector (f32, or f16 for
//      intra=fp16) over shared memory; column position c ends with row block c;
//   2. (the task packs the signs of its row block + compensation: before the bits plan, or
//      with localPrep chunk by chunk inside it, one kLocal op per column reduce-scatter chunk
//      of the block, in the order the column ring sends them; a chunk's first send and its
//      merge wait only for that chunk's op)
//   3. bits: Marsit across hosts on that block's words (column ring, merged hop by hop, then
//      column all-gather), then a row all-gather of the blocks' words, so every rank ends with
//      every bit.
// The padded length is a multiple of 64 X, so every row block is whole words.
#pragma once

#include <memory>
#include <vector>

#include "algorithms/dense/dense_plans.h"

namespace tsr::marsit {

struct HierPlans {
  std::shared_ptr<algorithms::Plan> rowReduceScatter;  // padded elements, in place, avg
  std::shared_ptr<algorithms::Plan> bits;              // padded/64 words, in place
  size_t padded = 0;                                   // elements
  size_t shardOffset = 0, shardCount = 0;              // this rank's row block, elements
};

Result<HierPlans> marsitHierPlans(int rank, int size, size_t count, DataType intraType,
                                  const std::vector<std::vector<int>>& grid, const algorithms::DenseOptions& options,
                                  bool localPrep = false);

}  // namespace tsr::marsit
