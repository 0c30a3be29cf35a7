// Marsit's ring on sign bits (Marsit, Sign Bit is Enough; docs/compressed.md): a reduce-scatter whose hops carry
// one bit per element and merge v' = (v AND s) OR ((v XOR s) AND t) (the incoming bits stand
// for k+1 workers at step k, the local ones for 1), then an all-gather of the merged bits. The
// vector is `words` 64-bit words; blocks and chunks are whole words (64-element aligned).
#pragma once

#include <memory>

#include "algorithms/dense/dense_plans.h"

namespace tsr::marsit {

// One rank's plan; the run's RunBuffers rngSeed/rngStep key the merge randomness. In place:
// input and output are the same word vector. localPrep: the words are packed chunk by chunk
// by kLocal ops (RunBuffers::local), listed in the order the ring needs them; each chunk's
// first send and its merge wait for its own op only, so packing the next chunk overlaps
// sending this one. Without it, the caller packs everything before the run.
Result<std::shared_ptr<algorithms::Plan>> marsitRingPlan(int rank, int size, size_t words,
                                                         const algorithms::DenseOptions& options,
                                                         bool localPrep = false);

// The allreduce (f64 sum) of a step's `scalars` (flatScalarCount, or two-level's 2): small and
// latency-bound, so Rabenseifner, whose 2 log2 N steps carry the ring's bytes where the ring
// takes 2(N-1) steps (on 256 GPUs in tsr-sim: 0.10 ms against 1.30, more than the whole bit
// torus step). Every rank ends with the same sums: each is reduced once, by its block's owner.
Result<std::shared_ptr<algorithms::Plan>> scalePlan(int rank, int size, size_t scalars,
                                                    const algorithms::DenseOptions& options);

}  // namespace tsr::marsit
