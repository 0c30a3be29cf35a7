// SelSync's pure logic (docs/references.md): parameters, the relative gradient change, flag packing, and
// the data helpers (SelDP partitioning, data injection). No communication here; selsync.h
// runs it over a communicator.
//
// Relative gradient change (the seed's Eqn. 2, lost in conversion, reconstructed): with x_i =
// ||g_i||^2 and s_i its EWMA over the last `window` steps (s = x_oldest; s = alpha*x + (1-alpha)*s
// over the window, alpha = ewma_alpha, default N/100 as in the seed), the change at step i is
// |s_i - s_{i-1}| / s_{i-1}. The first step has no predecessor, so no change can be measured:
// its change is 0 and, unless delta = 0, its flag is false (the trainer starts every rank from
// the same parameters, so there is nothing to average yet). A growth from a smoothed value of 0
// is an infinite change. A worker flags step i when change >= delta; delta = 0 flags every step
// (plain synchronous training), so a delta above every observed change never synchronizes.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace tsr::selsync {

enum class Aggregate { kParams, kGrads };

struct Params {
  double delta = 0.3;
  int ewmaWindow = 25;
  double ewmaAlpha = 0;  // 0 = N/100 (set by parse from the world size)
  Aggregate aggregate = Aggregate::kParams;
  bool cudaBuckets = false;  // memory=cuda: the buckets are CUDA device memory
};

// Keys: delta, ewma_window, ewma_alpha, aggregate=params|grads, memory=host|cuda. Errors name the key, the value
// and what is accepted.
Result<Params> parseParams(const std::map<std::string, std::string>& kv, int worldSize);
// ewma_alpha's default for N ranks: N/100, within [0.01, 1].
double defaultAlpha(int worldSize);

class GradientChange {
 public:
  explicit GradientChange(const Params& p) : window_(p.ewmaWindow), alpha_(p.ewmaAlpha) {}
  // Records ||g||^2 of this step and returns the relative change: 0 on the first step (nothing
  // to compare with), +inf when the previous smoothed value was 0 and this one is not (0 when
  // both are 0). NaN/Inf input is an error naming the value.
  Result<double> add(double gradNormSquared);
  // The smoothing for the steps to come (the history is kept): a team that changed size.
  void setAlpha(double alpha) { alpha_ = alpha; }

 private:
  double smoothed() const;
  size_t window_;
  double alpha_;
  std::deque<double> history_;
  double previous_ = 0;
  bool hasPrevious_ = false;
};

// One bit per rank in ceil(N/64) words: rank r's flag is bit r%64 of word r/64.
std::vector<uint64_t> flagWords(int worldSize, int rank, bool flag);
bool anyFlag(const std::vector<uint64_t>& words);
// The ranks whose bits are set in flag words (summed flagWords), ascending: "1, 3".
std::string flaggedRankList(const std::vector<uint64_t>& words);

// One step's exchange, summed over the ranks: ceil(N/64) words of flags, as many of the ranks
// that could not take part, then one count per status code of their failures, so every rank
// fails with the failing rank's code. `failure` is this rank's (Code::kOk: it takes part).
std::vector<uint64_t> exchangeWords(int worldSize, int rank, bool flagged, Code failure);
struct Exchange {
  std::vector<uint64_t> flags, failing;  // as flagWords, summed
  Code failure = Code::kOk;              // the lowest code any failing rank had
};
Exchange readExchange(int worldSize, const std::vector<uint64_t>& summed);

// SelDP: the sample indices rank `rank` visits in one epoch: the dataset split into N equal
// chunks (the last takes the remainder) visited as a circular queue starting at chunk `rank`.
std::vector<size_t> seldpOrder(size_t numSamples, int worldSize, int rank);

// Data injection: the ceil(alpha*N) ranks that share data at `step`, the same on every rank
// (a shared seed, Philox-free splitmix64 shuffle), ascending.
std::vector<int> injectionRanks(uint64_t seed, uint64_t step, int worldSize, double alpha);
// The local batch b' = b / (1 + alpha*beta*N), at least 1 (seed's Eqn. 3).
int injectedLocalBatch(int batch, double alpha, double beta, int worldSize);

}  // namespace tsr::selsync
