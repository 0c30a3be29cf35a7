// Bruck all-gather (any N, ceil(log2 N) steps) and binomial-tree broadcast.
//
// Bruck, vocabulary: position p of a group starts with its own piece. In step k (distance
// d = 2^k, while d < n) position p sends the pieces of positions p, p+1, ..., p+c-1 (mod n),
// c = min(d, n-d), to position p-d, and receives those of positions p+d, ..., p+d+c-1 from
// position p+d. After step k it holds positions [p, p+min(2d, n)); so ceil(log2 n) steps in
// all, against n-1 for the ring: the latency-bound choice for small payloads (SparDL's sparse
// blocks, SelSync's flag bits).
//
// Binomial broadcast: with v = (rank - root) mod n, in step k (mask 2^k) every v < mask that
// already has the data sends it to v + mask (when < n). ceil(log2 n) steps.
#pragma once

#include <vector>

#include "topology/ring_schedule.h"
#include "topology/schedule.h"

namespace tsr::topology {

int appendBruckAllGather(ScheduleBuilder& builder, int firstStep, const std::vector<int>& group,
                         const std::vector<Piece>& pieces);

// N ranks, N blocks, rank r starts with block r.
Schedule bruckAllGather(int n);

// N ranks, `numBlocks` blocks (all of them travel in every transfer; an executor may pipeline).
Schedule binomialBroadcast(int n, int root, int numBlocks = 1);

}  // namespace tsr::topology
