#include "tools/bench/bench_compressed.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "algorithms/dense/partition.h"
#include "algorithms/tensors/tensor_registry.h"
#include "tools/bench/bench_common.h"

namespace tsr::tools::bench {

namespace {

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A fresh gradient per rank and iteration (triangular in (-1, 1), nearly no ties): the dense
// path's small integers would tie by the thousand and put top-k on its slow exact path, and a
// gradient that never changes is not what training feeds a sparse allreduce.
void fill(std::vector<float>& g, int rank, int iteration) {
  const uint64_t seed = mix((static_cast<uint64_t>(rank) << 32) ^ static_cast<uint64_t>(iteration) ^ 0x5eedull);
  for (size_t j = 0; j < g.size(); ++j) {
    uint64_t h = mix(seed + j);
    g[j] = static_cast<float>(
        (static_cast<double>(h >> 32) + static_cast<double>(h & 0xffffffffu)) * (1.0 / 4294967296.0) - 1.0);
  }
}

size_t nonZeros(const float* x, size_t n) {
  size_t k = 0;
  for (size_t j = 0; j < n; ++j) k += x[j] != 0.0f;
  return k;
}

bool isSpardl(const BenchOptions& o) { return tensorFamilyOf(o) == "spardl"; }

// Whether the tensor keeps the top k of each step (its result has at most N*k non-zeros).
bool keepsTopK(const BenchOptions& o) { return hasSparseFloor(o) && !isSpardl(o); }

// The tensor --algo names, from the registry, with the options' keys.
Result<std::unique_ptr<algorithms::Tensor>> makeTensor(runtime::Communicator& comm, const BenchOptions& o,
                                                       size_t count) {
  algorithms::TensorSpec spec{"tsr-bench-" + std::to_string(count * 4),
                              count,
                              DataType::kF32,
                              {{"algorithm", o.algo}, {"op", reduceOpName(o.op)}}};  // -o sum|avg
  if (isSpardl(o)) {
    spec.params["density"] = densityText(o.density);
    spec.params["teams"] = std::to_string(o.teams);
    spec.params["sag"] = o.sag;
  } else if (keepsTopK(o)) {
    // The SparDL paper's TopA baseline: k as a ratio of the tensor (the registry takes ratios below 1 only).
    spec.params["k"] = o.density < 1.0 ? densityText(o.density) : std::to_string(std::max<size_t>(1, count));
  }
  return algorithms::makeTensor(comm, std::move(spec), "tsr-bench");
}

// -c 1 (see bench_compressed.h). Counting, as for Marsit: an element that differs across ranks
// counts on every rank; excess non-zeros count on the rank that holds them; a conservation
// failure counts once, on the rank whose part of the reduce-scatter holds the element.
Result<int64_t> countWrong(runtime::Communicator& comm, const BenchOptions& o, const std::vector<float>& result,
                           const std::vector<float>& in, const std::vector<float>& oldRes,
                           const std::vector<float>& newRes) {
  const size_t d = result.size();
  const int n = comm.size(), me = comm.rank();
  int64_t wrong = 0;
  TSR_ASSIGN_OR_RETURN(std::vector<bool> differ, differsAcrossRanks(comm, result));
  for (bool x : differ) wrong += x;
  if (isSpardl(o)) {
    // SparDL's blocks (spardl.cc): N/T balanced parts, k_b = ceil(density * block).
    const size_t nb = static_cast<size_t>(n / o.teams);
    for (size_t b = 0; b < nb; ++b) {
      algorithms::Range r = algorithms::balancedPart(d, nb, b);
      size_t kb = std::min(r.count, static_cast<size_t>(std::ceil(o.density * static_cast<double>(r.count))));
      size_t z = nonZeros(result.data() + r.offset, r.count);
      wrong += static_cast<int64_t>(z > kb ? z - kb : 0);
    }
  } else if (keepsTopK(o)) {
    size_t k =
        o.density < 1.0 ? std::max<size_t>(1, static_cast<size_t>(std::ceil(o.density * static_cast<double>(d)))) : d;
    size_t cap = std::min(d, k * static_cast<size_t>(n)), z = nonZeros(result.data(), d);
    wrong += static_cast<int64_t>(z > cap ? z - cap : 0);
  }
  // Conservation. The float64 sum of the three vectors is exact enough; what differs is the
  // tensors' own float arithmetic: each result element went through at most ~N float additions
  // of terms bounded by N * A, hence the tolerance; the two-level fp16 host sums round the
  // same way at f16's unit roundoff (the cast itself is in the residual).
  const size_t part = d ? (d + n - 1) / n : 0;
  std::vector<double> delta(part * n, 0.0), sum(part);
  double a = 0;
  for (size_t j = 0; j < d; ++j) {
    delta[j] = static_cast<double>(in[j]) + oldRes[j] - newRes[j];
    a = std::max({a, std::fabs(static_cast<double>(in[j])) + std::fabs(oldRes[j]), std::fabs(newRes[j]) + 0.0});
  }
  double amax = 0;
  TSR_RETURN_IF_ERROR(waitFor(comm.allreduce(&a, &amax, 1, DataType::kF64, ReduceOp::kMax)));
  if (part)
    TSR_RETURN_IF_ERROR(waitFor(comm.reduceScatter(delta.data(), sum.data(), part, DataType::kF64, ReduceOp::kSum)));
  const bool f16Sums = o.algo.size() > 5 && o.algo.compare(o.algo.size() - 5, 5, "-fp16") == 0;
  const double tol = 4.0 * n * n * std::ldexp(1.0, f16Sums ? -11 : -23) * amax;
  const double scale = o.op == ReduceOp::kSum ? 1.0 : n;  // -o: the sum, or the average
  for (size_t i = 0, j = me * part; i < part && j < d; ++i, ++j)
    wrong += !(std::fabs(sum[i] - scale * result[j]) <= tol);  // NaN counts as wrong
  return wrong;
}

}  // namespace

Result<BenchRow> runCompressedSize(runtime::Communicator& comm, const BenchOptions& o, size_t bytes,
                                   const RunnerHooks& hooks) {
  const int me = comm.rank();
  BenchRow row;
  row.count = bytes / sizeof(float);
  row.bytes = row.count * sizeof(float);
  row.iters = o.iters;
  row.algo = o.algo;
  auto made = makeTensor(comm, o, row.count);
  if (!made.isOk()) {
    // Every rank fails alike (e.g. --teams not dividing N): the row names the options.
    row.error = "--algo " + o.algo + " --density " + densityText(o.density) +
                (isSpardl(o) ? " --teams " + std::to_string(o.teams) + " --sag " + o.sag : "") + ": " +
                made.status().toString();
    return row;
  }
  algorithms::Tensor& t = *made.value();
  if (isSpardl(o)) {
    // "spardl-rsag T=2" -> "spardl-rsag-T2": one word, so the table stays split by blanks.
    row.algo.clear();
    for (char c : t.algorithm())
      if (c != '=') row.algo += c == ' ' ? '-' : c;
  }
  auto residual = [&](std::vector<float>& out) {
    out.resize(row.count);
    t.residual(out.data());
  };
  std::vector<float> g(row.count), in, oldRes, newRes;
  SlowestRank slowest(6);
  int64_t wrong = 0;
  for (int it = 0; it < o.warmup + o.iters; ++it) {
    fill(g, me, it);
    const bool check = o.check && it >= o.warmup;
    if (check) {
      in = g;
      residual(oldRes);
    }
    TSR_ASSIGN_OR_RETURN(TimedStep step, timeStep(comm, [&] { return stepOf(t, g.data()); }));
    if (!step.status.isOk()) {
      row.error = step.status.toString();
      return row;  // the communicator may be broken now: the caller stops the sweep
    }
    // SparDL times its parts; the others report only the result's non-zeros.
    std::vector<double> fields = {0, 0, 0, 0, static_cast<double>(nonZeros(g.data(), g.size())), 0};
    const char* names[6] = {"select", "merge", "wire", "total", "result_nonzeros", "local"};
    for (const algorithms::StepPart& part : t.lastStep())
      for (int f = 0; f < 6; ++f)
        if (part.name == names[f]) fields[f] = part.value;
    TSR_RETURN_IF_ERROR(keepSlowest(comm, step, fields, it >= o.warmup, slowest));
    if (it < o.warmup) continue;
    if (check) {
      residual(newRes);
      // Test hook: the first non-zero doubled on one rank: the cross-rank comparison sees it
      // on every rank (N > 1), conservation only where that rank owns it (N = 1).
      if (me == hooks.plantWrongOnRank) {
        auto nz = std::find_if(g.begin(), g.end(), [](float x) { return x != 0.0f; });
        if (nz != g.end()) *nz *= 2;
      }
      TSR_ASSIGN_OR_RETURN(int64_t w, countWrong(comm, o, g, in, oldRes, newRes));
      wrong += w;
    }
  }
  TSR_RETURN_IF_ERROR(fillTimingColumns(comm, slowest, wrong, o.check, row));
  row.hasSparse = true;  // only now: a failed row has no split to show
  SparseSplit& sp = row.sparse;
  sp.timed = isSpardl(o);
  sp.floorApplies = hasSparseFloor(o);
  double* out[4] = {&sp.select, &sp.merge, &sp.wire, &sp.total};
  for (int f = 0; f < 4; ++f) *out[f] = median(slowest.fields[f]);
  sp.nonZeros = static_cast<uint64_t>(median(slowest.fields[4]));
  sp.local = median(slowest.fields[5]);
  return row;
}

}  // namespace tsr::tools::bench
