// tsr-bench's command line, parsed into plain data (CLI11), nccl-tests style:
//   tsr-bench [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-n ITERS] [-w WARMUP] [-d TYPE] [-o OP]
//             [-c 0|1] [--op COLLECTIVE] [--algo NAME] [--json FILE] [-F table|csv|peer]
//             [--min-busbw GBPS] [--rate GBIT]
// A repeated option takes its last value, so a script's defaults can be overridden.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"

namespace tsr::tools::bench {

enum class Collective { kAllreduce, kAllgather, kReduceScatter, kBroadcast };
const char* collectiveName(Collective c);

struct BenchOptions {
  size_t minBytes = 8;
  size_t maxBytes = size_t{64} << 20;
  double factor = 2.0;
  int iters = 20;
  int warmup = 5;
  DataType dtype = DataType::kF32;
  ReduceOp op = ReduceOp::kSum;
  bool check = true;
  Collective collective = Collective::kAllreduce;
  std::string algo = "auto";     // auto|ring|torus (TSR_ALGO) or marsit|marsit-torus
  std::string jsonFile;
  std::string format = "table";  // table | csv | peer (the peer benchmarks' 11 columns)
  double minBusbw = 0;           // GB/s; below it the exit status is non-zero
  double rateGbit = 0;           // link rate for the floor column (0 = no floor)
};

// Parses argv; on --help returns kNotSupported with the help text as the message; errors name
// the option and the value.
Result<BenchOptions> parseBenchOptions(int argc, const char* const* argv);

// --algo marsit | marsit-torus: the Marsit sign-bit allreduce (algorithms/marsit) instead of a
// dense collective; the parser accepts it only for f32 allreduce with -o sum|avg.
bool isMarsit(const BenchOptions& o);

// Sizes from min to max multiplied by factor (factor <= 1: min only, then max), each rounded
// down to whole elements of `elementBytes` (and for allgather / reduce-scatter per-rank blocks).
std::vector<size_t> sweepSizes(const BenchOptions& o, size_t elementBytes);

}  // namespace tsr::tools::bench
