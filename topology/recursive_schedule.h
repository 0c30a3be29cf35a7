// Recursive halving/doubling allreduce (Rabenseifner), for any N.
//
// Vocabulary: P = the largest power of two <= N, and E = N - P "extra" ranks. The buffer is
// split into P blocks.
//  * fold (only when E > 0): for i < E, rank 2i sends its whole buffer to rank 2i+1, which adds
//    it in. The P survivors are the odd ranks below 2E and every rank from 2E on; survivor
//    number v (its "virtual rank") is rank/2 below 2E and rank-E above.
//  * recursive halving (reduce-scatter), log2 P steps: with mask = P/2, P/4, ..., 1 a survivor
//    exchanges with virtual partner v^mask; the lower of the two keeps the lower half of its
//    current block range and sends the upper half, the other the reverse; both add what they
//    receive. At the end virtual rank v holds one block, summed over everyone.
//  * recursive doubling (all-gather), log2 P steps in the reverse order of masks: partners
//    swap their ranges (copy), doubling them, until every survivor holds the whole sum.
//  * unfold (only when E > 0): rank 2i+1 sends the result to rank 2i.
// 2 log2 P (+2) steps; each survivor sends about 2(P-1)/P of the buffer.
#pragma once

#include <vector>

#include "topology/schedule.h"

namespace tsr::topology {

Schedule rabenseifnerAllreduce(int n);

// Recursive doubling allreduce for any N: the same fold, then log2 P steps in which partners
// v and v^mask swap their whole buffer and both add, then the unfold. Half Rabenseifner's
// steps but the whole buffer every step: the latency-bound choice for tiny buffers. (Every
// rank adds the same pairs in the same tree, and IEEE addition commutes, so all ranks end
// bit-identical.)
Schedule recursiveDoublingAllreduce(int n);

// Recursive doubling allreduce among `group` (size a power of two): in step k partners
// group[i] and group[i ^ 2^k] swap `blocks` and both add. Returns steps used (log2 |group|).
// This is R-SAG's cross-team phase (SparDL), where the payload cannot be halved.
int appendRecursiveDoublingAllreduce(ScheduleBuilder& builder, int firstStep, const std::vector<int>& group,
                                     const std::vector<BlockRange>& blocks);

bool isPowerOfTwo(int n);
// ceil(log2 n) for n >= 1.
int ceilLog2(int n);

}  // namespace tsr::topology
