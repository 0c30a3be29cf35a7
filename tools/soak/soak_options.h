// tsr-soak's command line (CLI11), parsed into plain data:
//   tsr-soak [--ops N] [--max-bytes SIZE] [--inflight N] [--cycles N] [--seed N]
//            [--algos all|NAME,...] [--warmup-pct P] [--rss-bound-mib M] [--samples N]
//            [--timeout-ms MS] [--json FILE] [--trace FILE]
// SIZE takes K, M, G suffixes (powers of 1024).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace tsr::tools::soak {

struct SoakOptions {
  uint64_t ops = 20000;                 // phase 1: mixed collectives
  size_t maxBytes = size_t{16} << 20;   // largest buffer of one collective on a rank
  int inflight = 8;                     // most collectives posted before the first is waited
  uint64_t cycles = 500;                // phase 2: communicator create/destroy cycles
  uint64_t seed = 1;                    // the same on every rank: the same sequence
  std::string algos = "all";            // setups (soak_plan.h defaultSetups)
  int warmupPct = 10;                   // of the ops, and of the cycles, before the figures count
  double rssBoundMiB = 16;              // allowed RSS growth after warm-up, per phase and rank
  int samples = 20;                     // figures taken per phase (plus one before it)
  int timeoutMs = 120000;               // TSR_TIMEOUT_MS (unless set): a hang becomes an error
  std::string jsonFile;                 // rank 0 also writes the final JSON line here
  std::string traceFile;                // every rank writes all its samples (CSV); %r = rank
  // Test hook (not in --help), "--plant-wrong RANK:OP": that rank alters one element of the
  // first non-empty result at or after operation OP, so the report of a wrong result is tested.
  int plantWrongRank = -1;
  uint64_t plantWrongOp = 0;
};

// Parses argv; on --help returns kNotSupported with the help text as the message; errors name
// the option and the value.
Result<SoakOptions> parseSoakOptions(int argc, const char* const* argv);

// "16M" -> 16777216; K, M, G (or KB, MB, GB) are powers of 1024.
Result<size_t> parseSize(const std::string& text);

}  // namespace tsr::tools::soak
