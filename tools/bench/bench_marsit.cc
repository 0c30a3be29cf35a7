#include "tools/bench/bench_marsit.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "algorithms/tensors/tensor_registry.h"
#include "base/reference_values.h"
#include "tools/bench/bench_common.h"

namespace tsr::tools::bench {

namespace {

// Same integers as the dense path (reference_values.h), exact zeros included: Marsit must take
// those with its fair coin.
void fill(std::vector<float>& g, int rank) {
  for (size_t j = 0; j < g.size(); ++j) g[j] = static_cast<float>(reference::inputValue(rank, j, ReduceOp::kSum));
}

// sum |g[j] + c[j] + mu M[j]| per scale block of `span` elements in float64: g' as Marsit
// forms it (M: the last estimate, tracked from the outputs; 0 without momentum).
std::vector<double> blockAbsOfInput(const std::vector<float>& g, const std::vector<float>& c,
                                    const std::vector<float>& est, double mu, size_t span) {
  std::vector<double> s(g.empty() ? 1 : (g.size() + span - 1) / span, 0.0);
  for (size_t j = 0; j < g.size(); ++j) s[j / span] += std::fabs(static_cast<double>(g[j] + c[j]) + mu * est[j]);
  return s;
}

// The check (-c 1). Compensation carries from step to step, so the expected magnitude comes
// from this step's real input: per scale block b (tensor.scaleSpan() elements),
// eta_b = (1/N) sum_r mean_{j in b} |g_r[j] + c_r[j] + mu M[j]| in float64, with c_r the
// compensation before the step (`localAbs`, taken outside the timed region) and M the last
// sign estimate, which the output hands over as out = M' - mu M (mu = tensor.momentum()), so
// `result` is the estimate out + mu M (the output itself when mu = 0). An element is
// wrong when its |value| is not eta_b (relative 1e-4: Marsit sums |g'| in float
// blocks and rounds eta to float; a flipped or scaled value is far off) or when the ranks' results
// differ. For the latter a 64-bit hash of each result is compared (max and min over ranks);
// only when they differ does an element-wise min/max allreduce say which elements. Each rank
// counts its own elements, so an element that differs across ranks counts on every rank.
// Two-level Marsit's eta is a mean over hosts of host averages (its float64 check is in
// algorithms/marsit/tests); here every element must carry the same finite, non-zero
// magnitude, the largest |result[0]| over ranks.
Result<int64_t> countWrong(runtime::Communicator& comm, const std::vector<float>& result,
                           const std::vector<double>& localAbs, size_t span, bool twoLevel) {
  const size_t d = result.size();
  const int n = comm.size();
  std::vector<double> eta(localAbs.size(), 0.0);
  TSR_RETURN_IF_ERROR(waitFor(comm.allreduce(localAbs.data(), eta.data(), eta.size(), DataType::kF64, ReduceOp::kSum)));
  for (size_t b = 0; b < eta.size(); ++b) {
    size_t len = std::min(d, (b + 1) * span) - std::min(d, b * span);
    eta[b] = len ? eta[b] / (static_cast<double>(len) * n) : 0;
  }
  if (twoLevel && d) {
    double first = std::fabs(static_cast<double>(result[0]));
    TSR_RETURN_IF_ERROR(waitFor(comm.allreduce(&first, &eta[0], 1, DataType::kF64, ReduceOp::kMax)));
    if (!(eta[0] > 0 && std::isfinite(eta[0]))) eta[0] = std::nan("");  // then every element counts as wrong
  }
  TSR_ASSIGN_OR_RETURN(std::vector<bool> differ, differsAcrossRanks(comm, result));
  int64_t wrong = 0;
  for (size_t j = 0; j < d; ++j) {
    bool differs = !differ.empty() && differ[j];
    const double e = eta[j / span];
    // Written so that NaN counts as wrong.
    wrong += differs || !(std::fabs(std::fabs(static_cast<double>(result[j])) - e) <= 1e-4 * e);
  }
  return wrong;
}

}  // namespace

Result<BenchRow> runMarsitSize(runtime::Communicator& comm, const BenchOptions& o, size_t bytes,
                               const RunnerHooks& hooks) {
  const int me = comm.rank();
  BenchRow row;
  row.count = bytes / sizeof(float);
  row.bytes = row.count * sizeof(float);
  row.iters = o.iters;
  const bool twoLevel = o.algo.rfind("marsit-2level", 0) == 0;
  auto created = algorithms::makeTensor(comm,
                                        {"tsr-bench-" + std::to_string(row.bytes),
                                         row.count,
                                         DataType::kF32,
                                         {{"algorithm", o.algo}, {"seed", "20261122"}, {"op", reduceOpName(o.op)}}},
                                        "tsr-bench");
  if (!created.isOk()) {
    row.algo = o.algo;
    row.error = created.status().toString();
    return row;
  }
  algorithms::Tensor& tensor = *created.value();
  row.algo = twoLevel ? o.algo : tensor.algorithm();  // says whether the host average was f16
  // The sign estimate M, tracked from the outputs (M' = out + mu M), and M before this step.
  const std::map<std::string, double> settings = tensor.settings();
  const double mu = settings.at("momentum");
  const size_t span = static_cast<size_t>(settings.at("scale_span"));
  const double perRank = o.op == ReduceOp::kSum ? comm.size() : 1;
  std::vector<float> g(row.count), comp, est(row.count, 0.0f);
  SlowestRank slowest(7);
  int64_t wrong = 0;
  for (int it = 0; it < o.warmup + o.iters; ++it) {
    fill(g, me);
    const bool check = o.check && it >= o.warmup;
    std::vector<double> localAbs(1, 0.0);
    if (check && !twoLevel) {
      // Flat Marsit's residual is its compensation, per element (two-level's check does not
      // use this sum).
      comp.resize(row.count);
      tensor.residual(comp.data());
      localAbs = blockAbsOfInput(g, comp, est, mu, span);
    }
    TSR_ASSIGN_OR_RETURN(TimedStep step, timeStep(comm, [&] { return stepOf(tensor, g.data()); }));
    if (!step.status.isOk()) {
      row.error = step.status.toString();
      return row;  // the communicator may be broken now: the caller stops the sweep
    }
    // The split's fields in StepSplit's order, from the step's named parts.
    std::vector<double> fields(7, 0.0);
    const char* names[7] = {"prepare", "pack", "wire", "merge", "decompress", "compensate", "total"};
    for (const algorithms::StepPart& part : tensor.lastStep())
      for (int f = 0; f < 7; ++f)
        if (part.name == names[f]) fields[f] = part.value;
    TSR_RETURN_IF_ERROR(keepSlowest(comm, step, fields, it >= o.warmup, slowest));
    // -o sum: the output is N times the average's.
    for (size_t j = 0; j < row.count; ++j) est[j] = static_cast<float>(g[j] / perRank + mu * est[j]);
    if (it < o.warmup) continue;
    if (check) {
      // Test hook: a sign flip only the cross-rank comparison sees, a doubling the eta check sees.
      std::vector<float> m = est;
      if (me == hooks.plantWrongOnRank && row.count >= 2) m[0] = -m[0], m[1] *= 2;
      TSR_ASSIGN_OR_RETURN(int64_t w, countWrong(comm, m, localAbs, span, twoLevel));
      wrong += w;
    }
  }
  TSR_RETURN_IF_ERROR(fillTimingColumns(comm, slowest, wrong, o.check, row));
  row.hasSplit = true;  // only now: a failed row has no split to show
  StepSplit& sp = row.split;
  double* out[7] = {&sp.prepare, &sp.pack, &sp.wire, &sp.merge, &sp.decompress, &sp.compensate, &sp.total};
  for (int f = 0; f < 7; ++f) *out[f] = median(slowest.fields[f]);
  return row;
}

}  // namespace tsr::tools::bench
