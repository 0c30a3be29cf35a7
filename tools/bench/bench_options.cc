#include "tools/bench/bench_options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

#include "algorithms/tensors/tensor_registry.h"
#include "runtime/config.h"
#include "tools/common/byte_size.h"

namespace tsr::tools::bench {

const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kAllreduce:
      return "allreduce";
    case Collective::kAllgather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kBroadcast:
      return "broadcast";
  }
  return "?";
}

std::string tensorFamilyOf(const BenchOptions& o) {
  // dense runs as TSR_ALGO=auto; compressed needs keys tsr-bench does not take (a compressor).
  if (o.algo == "dense" || o.algo == "compressed") return "";
  return algorithms::tensorFamily(o.algo);
}
bool isMarsit(const BenchOptions& o) { return tensorFamilyOf(o) == "marsit"; }
bool isCompressed(const BenchOptions& o) {
  const std::string family = tensorFamilyOf(o);
  return family == "compressed" || family == "spardl";
}

bool hasSparseFloor(const BenchOptions& o) {
  if (tensorFamilyOf(o) == "spardl") return true;
  const algorithms::TensorAlgorithmInfo* a = algorithms::findTensorAlgorithm(o.algo);
  return a && std::string(a->fixed).find("compressor=topk") != std::string::npos;
}

namespace {
// The dense algorithms: TSR_ALGO's values, from the runtime's settings table.
std::string denseAlgos() {
  for (const runtime::ConfigEntry& e : runtime::configTable())
    if (std::string(e.name) == "TSR_ALGO") return e.accepted;
  return "auto";
}

bool isDenseAlgo(const std::string& algo) {
  std::stringstream names(denseAlgos());
  for (std::string name; std::getline(names, name, '|');)
    if (name == algo) return true;
  return false;
}
}  // namespace

namespace {
// The tensor algorithms tsr-bench runs, "a|b|c".
std::string tensorAlgos() {
  std::string names;
  for (const algorithms::TensorAlgorithmInfo& a : algorithms::tensorAlgorithms()) {
    BenchOptions probe;
    probe.algo = a.name;
    if (!tensorFamilyOf(probe).empty()) names += (names.empty() ? "" : "|") + std::string(a.name);
  }
  return names;
}
}  // namespace

std::string densityText(double density) {
  char buf[64];
  auto end = std::to_chars(buf, buf + sizeof buf, density).ptr;
  return std::string(buf, end);
}

Result<BenchOptions> parseBenchOptions(int argc, const char* const* argv) {
  BenchOptions o;
  CLI::App app{"tsr-bench: collective benchmark over Tessera (run it under tsrun)", "tsr-bench"};
  std::string minB = "8", maxB = "64M", dtype = "f32", op = "sum", coll = "allreduce";
  int check = 1;
  app.option_defaults()->take_last();
  app.add_option("-b,--minbytes", minB, std::string("smallest message size: ") + tools::kByteSizeHelp);
  app.add_option("-e,--maxbytes", maxB, "largest message size");
  app.add_option("-f,--stepfactor", o.factor,
                 "size multiplier between rows (<= 1: only -b and -e); one row per distinct size, at most 200")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("-n,--iters", o.iters, "timed iterations per size")->check(CLI::Range(1, 100000));
  app.add_option("-w,--warmup_iters", o.warmup, "untimed iterations per size")->check(CLI::Range(0, 100000));
  app.add_option("-d,--datatype", dtype, "f32|f64|f16|bf16|i32|i64");
  // nccl-tests' spelling: --op names the collective, -o (long form --redop) the reduction;
  // --collective stays as an alias of --op.
  CLI::Option* redop = app.add_option(
      "-o,--redop", op,
      "reduction: sum|avg|min|max|prod, and band|bor|bxor (-d i32|i64); the tensor algorithms take sum|avg "
      "(default their own: spardl sums, the others average)");
  app.add_option("-c,--check", check, "check every result against a float64 reference (0|1)")->check(CLI::Range(0, 1));
  app.add_option("--op,--collective", coll, "collective: allreduce|allgather|reduce_scatter|broadcast");
  app.add_option("--algo", o.algo,
                 "auto|ring|torus|hier|rabenseifner|doubling|shm (allreduce; shm: every rank on one host), ring|bruck "
                 "(allgather) (sets TSR_ALGO; auto = the cost model's choice), or a tensor algorithm, f32 allreduce "
                 "only: " +
                     tensorAlgos() + " (tsr-info lists them)");
  app.add_option("--json", o.jsonFile, "write one JSON object per size to this file (rank 0)");
  app.add_option("-F,--format", o.format, "table|csv|peer")->check(CLI::IsMember({"table", "csv", "peer"}));
  app.add_option("--min-busbw", o.minBusbw, "exit non-zero when the average busbw (GB/s) is below (>= 0; 0: no bound)");
  app.add_option("--rate", o.rateGbit,
                 "link rate in Gbit/s: the floor 2(N-1)/N*S*8/rate and the time's ratio to it, in -F peer rows "
                 "and the compressed algorithms' split lines (0: none)")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--density", o.density, "spardl density / topk k ratio, in (0, 1] (default 0.01)");
  app.add_option("--teams", o.teams, "spardl teams (divides N; default 1)");
  app.add_option("--sag", o.sag, "spardl across teams: auto|r|b")->check(CLI::IsMember({"auto", "r", "b"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return Status(Code::kNotSupported, app.help());
  } catch (const CLI::ParseError& e) {
    return Status(Code::kInvalidArgument, std::string("tsr-bench: ") + e.what());
  }
  // Read as every tool reads sizes (tools/common/byte_size.h): K/M/G/T and KiB.. x1024, KB.. x1000.
  TSR_ASSIGN_OR_RETURN(o.minBytes, tools::parseByteSize(minB, "-b"));
  TSR_ASSIGN_OR_RETURN(o.maxBytes, tools::parseByteSize(maxB, "-e"));
  if (o.maxBytes < o.minBytes) return Status(Code::kInvalidArgument, "-e " + maxB + " is smaller than -b " + minB);
  bool found = false;
  for (int t = 0; t < kNumDataTypes; ++t)
    if (dtype == dataTypeName(static_cast<DataType>(t))) o.dtype = static_cast<DataType>(t), found = true;
  if (!found) return Status(Code::kInvalidArgument, "-d " + dtype + ": accepted values are f32|f64|f16|bf16|i32|i64");
  found = false;
  for (int k = 0; k < kNumReduceOps; ++k)
    if (op == reduceOpName(static_cast<ReduceOp>(k))) o.op = static_cast<ReduceOp>(k), found = true;
  if (!found)
    return Status(Code::kInvalidArgument, "-o " + op + ": accepted values are sum|avg|min|max|prod|band|bor|bxor");
  if (isBitwiseOp(o.op) && isFloatType(o.dtype))
    return Status(Code::kInvalidArgument, "-o " + op + " is bitwise: it takes -d i32 or i64, not -d " + dtype);
  if (!(o.minBusbw >= 0) || !std::isfinite(o.minBusbw))  // NaN too: no average is below it
    return Status(Code::kInvalidArgument,
                  "--min-busbw " + densityText(o.minBusbw) + ": accepted values are a bandwidth >= 0 (GB/s)");
  if (!std::isfinite(o.factor))
    return Status(Code::kInvalidArgument, "-f " + std::to_string(o.factor) + ": not a number");
  static const std::map<std::string, Collective> kColl = {{"allreduce", Collective::kAllreduce},
                                                          {"allgather", Collective::kAllgather},
                                                          {"reduce_scatter", Collective::kReduceScatter},
                                                          {"broadcast", Collective::kBroadcast}};
  auto it = kColl.find(coll);
  if (it == kColl.end())
    return Status(Code::kInvalidArgument,
                  "--op " + coll + ": accepted values are allreduce|allgather|reduce_scatter|broadcast");
  o.collective = it->second;
  o.check = check == 1;
  if (tensorFamilyOf(o).empty() && !isDenseAlgo(o.algo))
    return Status(Code::kInvalidArgument,
                  "--algo " + o.algo + ": accepted values are " + denseAlgos() + "|" + tensorAlgos());
  // A tensor algorithm leaves its own reduction unless -o names the other one (op= of the
  // tensor, which scales its result by N or 1/N); the row says which it was.
  if (!tensorFamilyOf(o).empty() && redop->count() == 0)
    o.op = tensorFamilyOf(o) == "spardl" ? ReduceOp::kSum : ReduceOp::kAvg;
  // Marsit replaces g by eta*(+-1), an estimate of the average of f32 gradients: nothing else.
  if (isMarsit(o)) {
    std::string why = "--algo " + o.algo + ": ";
    if (o.collective != Collective::kAllreduce)
      return Status(Code::kInvalidArgument, why + "--op " + coll + " is not accepted (Marsit is an allreduce)");
    if (o.dtype != DataType::kF32)
      return Status(Code::kInvalidArgument, why + "-d " + dtype + " is not accepted (Marsit takes f32 only)");
    if (o.op != ReduceOp::kSum && o.op != ReduceOp::kAvg)
      return Status(Code::kInvalidArgument,
                    why + "-o " + op + " is not accepted (Marsit estimates the average: avg, or sum = N times it)");
  }
  if (!(o.density > 0.0 && o.density <= 1.0))
    return Status(Code::kInvalidArgument, "--density " + densityText(o.density) + ": accepted values are in (0, 1]");
  if (o.teams < 1)
    return Status(Code::kInvalidArgument, "--teams " + std::to_string(o.teams) + ": accepted values are >= 1");
  // SparDL sums and the compressed tensors average f32 gradients: nothing else.
  if (isCompressed(o)) {
    std::string why = "--algo " + o.algo + ": ";
    if (o.collective != Collective::kAllreduce)
      return Status(Code::kInvalidArgument, why + "--op " + coll + " is not accepted (an allreduce only)");
    if (o.dtype != DataType::kF32)
      return Status(Code::kInvalidArgument, why + "-d " + dtype + " is not accepted (f32 only)");
    if (o.op != ReduceOp::kSum && o.op != ReduceOp::kAvg)
      return Status(Code::kInvalidArgument, why + "-o " + op +
                                                " is not accepted (sum|avg; without -o spardl sums, "
                                                "the compressed tensors average)");
    // Whether --teams divides N is known only under the communicator: the tensor says so then.
    bool pow2 = (o.teams & (o.teams - 1)) == 0;
    if (o.algo == "spardl" && o.sag == "r" && !pow2)
      return Status(Code::kInvalidArgument, why + "--sag r needs a power-of-two --teams, not --teams " +
                                                std::to_string(o.teams) + " (use --sag b or auto)");
  }
  return o;
}

Result<std::vector<size_t>> sweepSizes(const BenchOptions& o, size_t elementBytes) {
  std::vector<size_t> sizes;
  // Whole elements; a size under one element is one (-b 3 of f32 measured a 0-byte call), and
  // only 0 asked for is an empty row.
  auto whole = [&](size_t b) { return b == 0 ? 0 : std::max(elementBytes, b / elementBytes * elementBytes); };
  auto tooMany = [&] {
    return Status(Code::kInvalidArgument, "-f " + densityText(o.factor) + " from -b " + std::to_string(o.minBytes) +
                                              " to -e " + std::to_string(o.maxBytes) + " makes more than " +
                                              std::to_string(kMaxSweepRows) + " rows of " +
                                              std::to_string(elementBytes) +
                                              "-byte elements (the most a sweep takes): raise -f or narrow -b..-e");
  };
  if (o.factor <= 1.0) {  // -b, then -e unless it rounds to the same size
    sizes.push_back(whole(o.minBytes));
    if (whole(o.maxBytes) != sizes.back()) sizes.push_back(whole(o.maxBytes));
    return sizes;
  }
  // One row per distinct size: from b, the next row is the first b * factor^k that rounds past
  // this row's size (from an empty message, one byte: 0 times the factor stays 0), so a factor
  // just above 1 neither repeats a size nor spins through the steps that round to it.
  const double top = static_cast<double>(o.maxBytes) * 1.0000001;
  for (double b = static_cast<double>(o.minBytes); b <= top;) {
    const size_t s = whole(static_cast<size_t>(b));
    sizes.push_back(s);
    if (sizes.size() > kMaxSweepRows) return tooMany();
    if (b == 0) {
      b = 1;
      continue;
    }
    const double want = static_cast<double>(s + elementBytes);  // the next size a row can have
    const double k = std::max(1.0, std::ceil(std::log(want / b) / std::log(o.factor)));
    b = std::max(b * std::pow(o.factor, k), want);  // past `want` only by pow's rounding
  }
  return sizes;
}

}  // namespace tsr::tools::bench
