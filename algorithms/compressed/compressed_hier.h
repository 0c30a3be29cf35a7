// Two-level compressed tensor (BytePS compression's two-level compression with any compressor of the
// registry), selected by intra=none|fp16 on the communicator's host grid (rows are hosts,
// X ranks per host, Y hosts; algorithms/dense/host_grid_plans.h). Each step:
//   1. x = g + q (q: what this rank's last f16 cast dropped), cast to the intra type
//      (q' = x - f16(x); intra=none: q stays 0); the host's ranks average the vector over
//      the row ring, position c ending with row block c (the "shard", ceil(D / X) elements);
//   2. one flag allreduce over all ranks: NaN/Inf in any input or host-average block fails the
//      step everywhere before any state changes;
//   3. the shard goes through this rank's compressor (error feedback on by default: the EF
//      state belongs to the shard), the Y ranks of the column all-gather their payloads,
//      decode them in row order and average: the block of the result;
//   4. the row all-gathers the blocks: every rank ends with the same D floats.
// Accounting: the EF error e of a shard is in units of a host average, so what this rank
// keeps back, in units of its own contribution, is q + X e (e placed at the shard):
//   N * result + sum_r residual'_r = sum_r (g_r + residual_r)
// up to f32 rounding, with intra=fp16 too: q keeps what the cast dropped and what this rank's
// f16 sums and division in the host ring rounded away (RunBuffers::droppedRounding).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algorithms/compress/registry.h"
#include "algorithms/dense/host_grid_plans.h"
#include "algorithms/team/team.h"

namespace tsr::compressed {

struct CompressedState;

struct CompressedHier {
  DataType intraType = DataType::kF32;
  algorithms::GridPlace place;
  size_t padded = 0;                               // elements, a multiple of X
  size_t shardOffset = 0, shardCount = 0;          // this rank's row block
  size_t shardReal = 0;                            // its elements below count (the rest is padding)
  std::vector<float> work;                         // g + q, count
  std::vector<float> intraResidual, nextResidual;  // q and the step's q' (committed at the end)
  bool intraResidualOnce = false;                  // intra=none: q came from setResidual; the next step clears it
  std::vector<float> dropped;                      // padded (intra=fp16): what the host ring's f16 sums
                                                   // and division rounded away, added to q' at the end
  std::vector<uint64_t> intraBuffer;               // padded elements of intraType
  std::vector<float> shard;                        // shardReal: this rank's block of the host average
  std::vector<float> block, result;                // shardCount (decoded average); padded (gathered)
  std::shared_ptr<const algorithms::Plan> rowPlan, columnPlan, rowGatherPlan;
  std::vector<uint64_t> rowScratch, columnScratch, rowGatherScratch;
  size_t badIndex = 0;        // first bad element of g + q (count: none)
  bool overflow = false;      // badIndex is finite in g + q but not in f16
  bool shardRefused = false;  // the shard's average is finite, but the column's compressor cannot take it
};

// "none" -> kF32, "fp16" -> kF16; other values: InvalidArgument naming intra=<value>.
Result<DataType> parseIntra(const std::string& value);

// The compressor parameters for a shard of `shardReal` of the tensor's `count` elements: a
// topk/randomk k given as a count is that share of it (ceil, at least 1), so the result keeps
// about k entries in all, as the flat tensor does; ratios and other keys pass unchanged.
compress::Params shardParams(const compress::Params& kv, size_t shardReal, size_t count);

// Fills s (whose name, count, rank and size are set) for the two-level schedule: the shard's
// compressor, slots, plans and buffers. NotSupported when the job has no host grid (unequal
// hosts, a prime N on one host), naming why.
Status setUpTwoLevel(CompressedState& s, algorithms::Team& comm, DataType intraType, const compress::Params& kv);

// What this rank keeps back, count floats: q + X * (EF error of the shard) at the shard.
void twoLevelResidual(const CompressedState& s, float* out);

}  // namespace tsr::compressed
