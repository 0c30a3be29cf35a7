// tsr-soak's command line (CLI11), parsed into plain data:
//   tsr-soak [--ops N] [--max-bytes SIZE] [--inflight N] [--cycles N] [--seed N]
//            [--algos all|NAME,...] [--warmup-pct P] [--cycle-warmup-pct P]
//            [--rss-bound-mib M] [--cycle-rss-bound-kib K] [--samples N]
//            [--timeout-ms MS] [--json FILE] [--trace FILE]
// SIZE takes K, M, G suffixes (powers of 1024).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace tsr::tools::soak {

struct SoakOptions {
  uint64_t ops = 20000;                // phase 1: mixed collectives
  size_t maxBytes = size_t{16} << 20;  // largest buffer of one collective on a rank
  int inflight = 8;                    // most collectives posted before the first is waited
  uint64_t cycles = 500;               // phase 2: communicator create/destroy cycles
  uint64_t seed = 1;                   // the same on every rank: the same sequence
  std::string algos = "all";           // setups (soak_plan.h defaultSetups)
  // Warm-up before the figures count, and the RSS growth allowed after it, per rank. The mixed
  // phase raises per-communicator high-water marks (plan caches, UCX's receive pools, 2 MiB a
  // descriptor over TCP) for a long while: on 4 ranks with the 8 default communicators and
  // 20,000 operations, RSS outside the scratch pools rose by 22 MiB between 40% and 53% on one
  // rank, and by 1.3 to 15.6 MiB over the second half on each of 12 rank-runs
  // (docs/reliability.md). 32 MiB over 10,000 operations still fails a leak of 3.3 KiB each.
  int warmupPct = 50;              // of the mixed operations
  int cycleWarmupPct = 10;         // of the create/destroy cycles
  double rssBoundMiB = 32;         // mixed phase
  double cycleRssBoundKiB = 1024;  // create/destroy phase
  int samples = 20;                // figures taken per phase (plus one before it)
  int timeoutMs = 120000;          // TSR_TIMEOUT_MS (unless set): a hang becomes an error
  std::string jsonFile;            // rank 0 also writes the final JSON line here
  std::string traceFile;           // every rank writes all its samples (CSV); %r = rank
  // Test hook (not in --help), "--plant-wrong RANK:OP": that rank alters one element of the
  // first non-empty result at or after operation OP, so the report of a wrong result is tested.
  int plantWrongRank = -1;
  uint64_t plantWrongOp = 0;
};

// Parses argv; on --help returns kNotSupported with the help text as the message; errors name
// the option and the value.
Result<SoakOptions> parseSoakOptions(int argc, const char* const* argv);

}  // namespace tsr::tools::soak
