// Ring schedules: reduce-scatter, all-gather and allreduce over a ring of ranks.
//
// Vocabulary: the ring is a list of ranks; position p sends to position p+1 and receives from
// p-1 (mod n). Each position owns a piece of the buffer (one block or a list of ranges).
//  * reduce-scatter, step s = 0..n-2: position p sends piece (p-s-1) and receives piece (p-s-2),
//    adding it in; after n-1 steps position p holds piece p summed over all n positions.
//  * all-gather, step s = 0..n-2: position p sends piece (p-s), receives piece (p-s-1) as a copy.
//  * allreduce = reduce-scatter then all-gather: 2(n-1) steps, each rank sends 2(n-1)/n of the
//    buffer, the bandwidth optimum.
// The whole-world builders take a ring order (a permutation of 0..N-1, e.g. ringOrder() of a
// HostMap) and use N blocks with block r owned by rank r, whatever its ring position.
#pragma once

#include <vector>

#include "topology/schedule.h"

namespace tsr::topology {

using Piece = std::vector<BlockRange>;

// Append to `builder` from `firstStep`; ring[p] is the rank at position p, pieces[p] what it
// owns. Return the number of steps used (n-1; 0 for n <= 1).
int appendRingReduceScatter(ScheduleBuilder& builder, int firstStep, const std::vector<int>& ring,
                            const std::vector<Piece>& pieces);
int appendRingAllGather(ScheduleBuilder& builder, int firstStep, const std::vector<int>& ring,
                        const std::vector<Piece>& pieces);

std::vector<int> identityOrder(int n);

Schedule ringReduceScatter(const std::vector<int>& order);
Schedule ringAllGather(const std::vector<int>& order);
Schedule ringAllreduce(const std::vector<int>& order);

}  // namespace tsr::topology
