// Data injection for non-IID data (the SelSync paper, section on data injection): at each step the
// ceil(alpha*N) ranks chosen by injectionRanks(seed, step, N, alpha) (the same on every rank,
// no message needed to agree) each send `shareCount` floats, the beta fraction of their local
// batch b' = injectedLocalBatch(b, alpha, beta, N) the trainer packed, to every other rank,
// point to point. Every rank receives the chosen ranks' shares (its own excluded), in
// ascending rank order: b' + alpha N beta b' = b samples again (seed's Eqn. 3).
#pragma once

#include <cstdint>

#include "algorithms/team/team.h"

namespace tsr::selsync {

struct Injection {
  std::vector<int> senders;  // the chosen ranks, ascending
  size_t receivedCount = 0;  // floats that land in `received`
};

// Collective: every rank calls it with the same seed, step, alpha and shareCount. `received`
// must hold (senders other than this rank) x shareCount floats (at most N x shareCount);
// `capacity` is its size in floats. Blocks until this rank's part is done.
Result<Injection> injectData(algorithms::Team& comm, uint64_t seed, uint64_t step, double alpha, const float* share,
                             size_t shareCount, float* received, size_t capacity);

}  // namespace tsr::selsync
