// tsr-bench's command line, parsed into plain data (CLI11), nccl-tests style:
//   tsr-bench [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-n ITERS] [-w WARMUP] [-d TYPE]
//             [-o|--redop sum|avg|min|max|prod] [-c 0|1]
//             [--op allreduce|allgather|reduce_scatter|broadcast] (alias --collective)
//             [--algo NAME] [--json FILE] [-F table|csv|peer]
//             [--min-busbw GBPS] [--rate GBIT] [--density D] [--teams T] [--sag auto|r|b]
// A repeated option takes its last value, so a script's defaults can be overridden.
#pragma once

#include <cstddef>
#include <map>
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
  std::string algo = "auto";  // auto|ring|torus|hier|rabenseifner|doubling|bruck|shm (TSR_ALGO), or a
                              // tensor algorithm of the registry (marsit, spardl, topk, onebit, ...)
  std::string jsonFile;
  std::string format = "table";  // table | csv | peer (the peer benchmarks' 11 columns)
  double minBusbw = 0;           // GB/s; below it the exit status is non-zero
  double rateGbit = 0;           // link rate for the floor column (0 = no floor)
  // Sparse algorithms only; the others accept and ignore them, so one cluster.sh command line
  // serves every algorithm of ALGOS.
  double density = 0.01;     // spardl density, topk's k as a ratio
  int teams = 1;             // spardl teams
  std::string sag = "auto";  // spardl sag=auto|r|b
};

// Parses argv; on --help returns kNotSupported with the help text as the message; errors name
// the option and the value.
Result<BenchOptions> parseBenchOptions(int argc, const char* const* argv);

// --algo naming a tensor algorithm (algorithms/tensors/tensor_registry.h: marsit,
// marsit-torus, marsit-2level[-fp16], spardl, topk, topk-2level[-fp16], onebit) runs that
// tensor instead of a dense collective; the parser accepts it only for f32 allreduce with
// -o sum|avg (the tensor's op=); without -o, the tensor's own: sum for spardl, avg for the
// others. Its family: "marsit", "compressed" or "spardl"; empty for a dense collective.
std::string tensorFamilyOf(const BenchOptions& o);
bool isMarsit(const BenchOptions& o);
// A compressed or SparDL tensor (the compressed runner, bench_compressed.h).
bool isCompressed(const BenchOptions& o);
// SparDL or a top-k tensor: a sparse result, measured against SparDL's floor (onebit and the
// casts send a dense payload: they have no such floor).
bool hasSparseFloor(const BenchOptions& o);

// The density as the shortest text that reads back as the same double ("0.01").
std::string densityText(double density);

// The most rows one sweep takes.
constexpr size_t kMaxSweepRows = 200;

// Sizes from min to max multiplied by factor (factor <= 1: min only, then max), each rounded
// down to whole elements of `elementBytes` (and for allgather / reduce-scatter per-rank blocks),
// one row per distinct size. More than kMaxSweepRows rows: an error naming -f, -b and -e.
Result<std::vector<size_t>> sweepSizes(const BenchOptions& o, size_t elementBytes);

}  // namespace tsr::tools::bench
