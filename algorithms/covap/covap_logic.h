// COVAP's pure logic (docs/references.md): which buckets (tensors) a step communicates, how large buckets
// are sharded, the interval from the measured communication-to-computation ratio, and the
// error-feedback coefficient. No communication here.
//
// Reconstruction of the seed's median (its text gives only the example): the sharding median
// is the median of the bucket sizes once the buckets at least twice the plain median are set
// aside, so a few giant layers do not drag it up. On the seed's VGG-19 buckets (Table V:
// 4101096, 16781312, 107480576, 7079424, 7669760, 555072 elements) this gives the seed's median
// 5590260 and its shard counts 3 and 19 (26 tensors in all); the plain median (7374592) would
// give 2 and 14.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace tsr::covap {

struct Params {
  int interval = 0;     // 0 = auto (from the profile)
  int maxInterval = 0;  // auto: the largest I taken (0 = no cap, the seed's I = ceil(CCR))
  int profileSteps = 3;
  double efInit = 0.1;  // error-feedback coefficient schedule (the COVAP paper, III-D)
  int efAscendSteps = 100;
  double efAscendRange = 0.1;
};

// Keys: interval=auto|<int >= 1>, max_interval (auto's cap: a model whose step computes in
// microseconds against milliseconds of communication would otherwise sync once in hundreds of
// steps), profile_steps, ef_init, ef_ascend_steps, ef_ascend_range.
// Errors name the key, the value and what is accepted.
Result<Params> parseParams(const std::map<std::string, std::string>& kv);

// I = ceil(CCR), at least 1 (CCR <= 1 means everything can overlap: communicate every step).
// maxInterval > 0 caps it.
int intervalFromCcr(double ccr, int maxInterval = 0);

// The sharding median (see the header comment). 0 for no buckets.
double shardingMedian(const std::vector<size_t>& bucketCounts);

struct Shard {
  size_t bucket;
  size_t offset;  // elements into the bucket
  size_t count;
};

// Buckets larger than the median split into min(floor(numel/median), interval) nearly equal
// shards (a bucket with floor(numel/median) < 2 stays whole); in bucket order.
std::vector<Shard> shardBuckets(const std::vector<size_t>& bucketCounts, int interval);

// Shard t is communicated at step s when (t + s) mod I == 0: every rank computes the same
// answer, so no message is needed to agree.
inline bool selected(size_t shard, uint64_t step, int interval) {
  return interval <= 1 || (shard + step) % static_cast<uint64_t>(interval) == 0;
}

// min(ef_init + floor(step / ef_ascend_steps) * ef_ascend_range, 1).
double efCoefficient(uint64_t step, const Params& p);

}  // namespace tsr::covap
