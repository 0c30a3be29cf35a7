// tsr-check: on the job tsrun (or another launcher) started, runs the ten cases of kCases and
// the list below (allreduce on six dtype/op pairs, all-gather, reduce-scatter, broadcast and a
// barrier), checks every element of each result against a float64 reference, and prints one
// table row per case on rank 0; a rank that sees a failure or wrong values prints its own line.
// Exit status 1 when any value is wrong or any collective fails, 2 on a usage error.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "base/reference_values.h"
#include "runtime/communicator.h"

using namespace tsr;
using runtime::Communicator;

namespace {

// The float64 reference every multi-rank check shares (base/reference_values.h).
double load(const std::vector<char>& b, size_t i, DataType t) { return reference::loadValue(b.data(), i, t); }
void store(std::vector<char>& b, size_t i, DataType t, double v) { reference::storeValue(b.data(), i, t, v); }
using reference::closeEnough;
using reference::inputValue;
using reference::reduceReference;

struct Row {
  std::string collective, dtype, op, algo;
  size_t count = 0;
  double usMedian = 0;
  int64_t wrong = 0;  // this rank's wrong elements (a result of 2^20 elements may be all wrong)
  std::string error;
};

// The allreduce cases.
struct Case {
  DataType t;
  ReduceOp op;
  size_t count;
};
constexpr Case kCases[] = {{DataType::kF32, ReduceOp::kSum, (1u << 20) + 3},
                           {DataType::kF64, ReduceOp::kAvg, 100003},
                           {DataType::kF16, ReduceOp::kSum, 65536},
                           {DataType::kBF16, ReduceOp::kMax, 4097},
                           {DataType::kI32, ReduceOp::kMin, 1},
                           {DataType::kI64, ReduceOp::kProd, 4099}};
constexpr size_t kGatherCount = 250000, kBroadcastCount = 500000;
constexpr int kIters = 5;

// What it checks, from the cases it runs (--help).
std::string helpText() {
  std::string cases;
  for (const Case& c : kCases)
    cases += std::string("  allreduce ") + dataTypeName(c.t) + " " + reduceOpName(c.op) + ", " +
             std::to_string(c.count) + (c.count == 1 ? " element\n" : " elements\n");
  const std::string perRank = std::to_string(kGatherCount) + " elements per rank\n";
  return "usage: tsrun -np N [tsrun options] tsr-check\n"
         "Checks these 10 cases on the job's ranks, each run " +
         std::to_string(kIters) + " times:\n" + cases + "  allgather f32, " + perRank + "  reduce_scatter f32 sum, " +
         perRank + "  broadcast i64 from the last rank, " + std::to_string(kBroadcastCount) +
         " elements\n"
         "  barrier\n"
         "Every element of each case's last result is compared with a float64 reference (allgather and\n"
         "broadcast: exactly). Nothing else is run: not all-to-all, send/recv or the tensor algorithms,\n"
         "nor other dtypes, ops or sizes.\n"
         "Rank 0 prints one row per case: the median time of the collective alone and the wrong elements\n"
         "summed over the ranks; a rank whose call failed or whose result was wrong prints its own line.\n"
         "Exit status: 1 on a wrong value or a failed collective; 2 on a usage error.\n"
         "It takes no options: settings come from TSR_* variables (tsr-info -s).\n";
}

// Test hooks (not in --help): "--plant-wrong R" makes rank R alter every element of the first
// allreduce's result, "--plant-error R" makes rank R's barrier row fail.
struct Hooks {
  int plantWrong = -1, plantError = -1;
};

// Runs `post` iters times, `prepare` (untimed) before each; returns the median time of the
// collective alone in microseconds, the algorithm that served it (the cost model's choice,
// or TSR_ALGO's) and the last status.
Status timed(
    const std::function<Result<runtime::RequestPtr>()>& post, int iters, Row* row,
    const std::function<void()>& prepare = [] {}) {
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    prepare();
    auto t0 = std::chrono::steady_clock::now();
    auto req = post();
    if (!req.isOk()) return req.status();
    Status st = req.value()->wait();
    row->algo = req.value()->algorithm();
    if (!st.isOk()) return st;
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  row->usMedian = times[times.size() / 2];
  return Status::ok();
}

// A rank that saw a failure or wrong values says so itself (rank 0 prints only the totals).
void reportOwn(int me, const Row& r) {
  const std::string what = r.collective + (r.dtype == "-" ? "" : " " + r.dtype) + (r.op == "-" ? "" : " " + r.op);
  if (!r.error.empty()) std::fprintf(stderr, "tsr-check: rank %d: %s: %s\n", me, what.c_str(), r.error.c_str());
  if (r.wrong > 0)
    std::fprintf(stderr, "tsr-check: rank %d: %s: %lld wrong elements of %zu\n", me, what.c_str(),
                 static_cast<long long>(r.wrong), r.count);
}

}  // namespace

int main(int argc, char** argv) {
  // No options: the settings come from TSR_* variables (tsr-info -s lists them).
  Hooks hooks;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--plant-wrong" || arg == "--plant-error") && i + 1 < argc) {
      (arg == "--plant-wrong" ? hooks.plantWrong : hooks.plantError) = std::atoi(argv[++i]);
      continue;
    }
    const bool help = arg == "-h" || arg == "--help";
    std::fprintf(help ? stdout : stderr, "%s%s", help ? "" : ("tsr-check: unknown argument '" + arg + "'\n").c_str(),
                 helpText().c_str());
    return help ? 0 : 2;
  }
  auto created = Communicator::createFromEnvironment();
  if (!created.isOk()) {
    std::fprintf(stderr, "tsr-check: %s\n", created.status().toString().c_str());
    return 2;
  }
  Communicator& comm = *created.value();
  const int n = comm.size(), me = comm.rank();
  std::vector<Row> rows;

  for (const Case& c : kCases) {
    size_t es = dataTypeSize(c.t);
    std::vector<char> in(c.count * es), out(c.count * es);
    for (size_t j = 0; j < c.count; ++j) store(in, j, c.t, inputValue(me, j, c.op));
    Row row{"allreduce", dataTypeName(c.t), reduceOpName(c.op), "", c.count, 0, 0, ""};
    Status st = timed([&] { return comm.allreduce(in.data(), out.data(), c.count, c.t, c.op); }, kIters, &row);
    if (!st.isOk()) row.error = st.toString();
    if (me == hooks.plantWrong && rows.empty())  // test hook: every element of the first case
      for (size_t j = 0; j < c.count; ++j) store(out, j, c.t, reduceReference(n, j, c.op, c.t) + 1000);
    for (size_t j = 0; j < c.count && st.isOk(); ++j)
      row.wrong += !closeEnough(load(out, j, c.t), reduceReference(n, j, c.op, c.t), c.t);
    rows.push_back(row);
  }
  {
    size_t count = kGatherCount;
    std::vector<char> in(count * 4), out(count * 4 * n);
    for (size_t j = 0; j < count; ++j) store(in, j, DataType::kF32, me * 1000.0 + j % 100);
    Row row{"allgather", "f32", "-", "", count, 0, 0, ""};
    Status st = timed([&] { return comm.allgather(in.data(), out.data(), count, DataType::kF32); }, kIters, &row);
    if (!st.isOk()) row.error = st.toString();
    for (int r = 0; r < n && st.isOk(); ++r)
      for (size_t j = 0; j < count; ++j) row.wrong += load(out, r * count + j, DataType::kF32) != r * 1000.0 + j % 100;
    rows.push_back(row);
  }
  {
    size_t count = kGatherCount;
    std::vector<char> in(count * 4 * n), out(count * 4);
    for (size_t j = 0; j < count * n; ++j) store(in, j, DataType::kF32, inputValue(me, j, ReduceOp::kSum));
    Row row{"reduce_scatter", "f32", "sum", "", count, 0, 0, ""};
    Status st = timed([&] { return comm.reduceScatter(in.data(), out.data(), count, DataType::kF32, ReduceOp::kSum); },
                      kIters, &row);
    if (!st.isOk()) row.error = st.toString();
    for (size_t j = 0; j < count && st.isOk(); ++j)
      row.wrong += !closeEnough(load(out, j, DataType::kF32),
                                reduceReference(n, me * count + j, ReduceOp::kSum, DataType::kF32), DataType::kF32);
    rows.push_back(row);
  }
  {
    size_t count = kBroadcastCount;
    int root = n - 1;
    std::vector<char> buf(count * 8);
    Row row{"broadcast", "i64", "-", "", count, 0, 0, ""};
    // The root's values and the others' -1 are written again before each call, outside the time.
    Status st = timed([&] { return comm.broadcast(buf.data(), buf.data(), count, DataType::kI64, root); }, kIters, &row,
                      [&] {
                        for (size_t j = 0; j < count; ++j)
                          store(buf, j, DataType::kI64, me == root ? static_cast<double>(j) : -1.0);
                      });
    if (!st.isOk()) row.error = st.toString();
    for (size_t j = 0; j < count && st.isOk(); ++j) row.wrong += load(buf, j, DataType::kI64) != static_cast<double>(j);
    rows.push_back(row);
  }
  {
    Row row{"barrier", "-", "-", "", 0, 0, 0, ""};
    Status st = timed([&] { return comm.barrier(); }, kIters, &row);
    if (!st.isOk()) row.error = st.toString();
    if (me == hooks.plantError) row.error = "TSR_ERR_INTERNAL: planted (--plant-error)";  // test hook
    rows.push_back(row);
  }
  for (const Row& r : rows) reportOwn(me, r);

  // Every rank's wrong counts and failures reach rank 0: per case the sum of the wrong counts,
  // the number of ranks that failed, and the lowest of them.
  const size_t k = rows.size();
  std::vector<int64_t> mine(2 * k), sums(2 * k), firstMine(k), first(k);
  for (size_t i = 0; i < k; ++i) {
    mine[i] = rows[i].wrong;
    mine[k + i] = rows[i].error.empty() ? 0 : 1;
    firstMine[i] = rows[i].error.empty() ? n : me;
  }
  auto sum = comm.allreduce(mine.data(), sums.data(), mine.size(), DataType::kI64, ReduceOp::kSum);
  Status st = sum.isOk() ? sum.value()->wait() : sum.status();
  if (st.isOk()) {
    auto min = comm.allreduce(firstMine.data(), first.data(), k, DataType::kI64, ReduceOp::kMin);
    st = min.isOk() ? min.value()->wait() : min.status();
  }
  if (!st.isOk()) {
    std::fprintf(stderr, "tsr-check: rank %d: could not collect the results: %s\n", me, st.toString().c_str());
    return 1;
  }
  int64_t bad = 0;
  for (size_t i = 0; i < k; ++i) bad += sums[i] != 0 || sums[k + i] != 0;
  if (me == 0) {
    std::printf("tessera check: %d ranks, UCX transport, %d iterations per case (median time)\n", n, kIters);
    std::printf("%-15s %-5s %-5s %-13s %10s %12s %8s  %s\n", "collective", "type", "op", "algo", "count", "time(us)",
                "#wrong", "result");
    for (size_t i = 0; i < k; ++i) {
      const Row& r = rows[i];
      const int64_t failed = sums[k + i];
      // A failed case has no count of wrong values: "-", and which ranks said why.
      std::string wrong = failed ? "-" : std::to_string(sums[i]);
      std::string result = failed ? "ERROR on " + std::to_string(failed) + " rank" + (failed > 1 ? "s" : "") +
                                        " (rank " + std::to_string(first[i]) + "'s own line says why)"
                           : sums[i] ? "WRONG"
                                     : "OK";
      std::printf("%-15s %-5s %-5s %-13s %10zu %12.1f %8s  %s\n", r.collective.c_str(), r.dtype.c_str(), r.op.c_str(),
                  r.algo.c_str(), r.count, r.usMedian, wrong.c_str(), result.c_str());
    }
    std::printf("%s: %zu cases, %lld failed\n", bad ? "FAILED" : "PASSED", k, static_cast<long long>(bad));
  }
  return bad ? 1 : 0;
}
