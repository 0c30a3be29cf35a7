// tsr-check: runs every collective on the job tsrun (or another launcher) started, checks
// every element against a float64 reference, and prints one table row per case on rank 0.
// Exit status is non-zero when any value is wrong or any collective fails.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
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
  size_t count;
  double usMedian;
  long wrong;
  std::string error;
};

// Runs `post` iters times; returns the median time in microseconds, the algorithm that
// served it (the cost model's choice, or TSR_ALGO's) and the last status.
Status timed(const std::function<Result<runtime::RequestPtr>()>& post, int iters, Row* row) {
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
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

}  // namespace

int main(int argc, char** argv) {
  // No options: the settings come from TSR_* variables (tsr-info -s lists them).
  if (argc > 1) {
    const std::string arg = argv[1];
    const bool help = arg == "-h" || arg == "--help";
    std::fprintf(help ? stdout : stderr,
                 "%susage: tsrun -np N [tsrun options] tsr-check\n"
                 "Runs every collective on every dtype and op on the job's ranks, checks every element against "
                 "a float64 reference and prints one row per case on rank 0; exit status 1 on a wrong value or "
                 "a failed collective. It takes no options: settings come from TSR_* variables (tsr-info -s).\n",
                 help ? "" : ("tsr-check: unknown argument '" + arg + "'\n").c_str());
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
  const int iters = 5;

  struct Case {
    DataType t;
    ReduceOp op;
    size_t count;
  };
  for (Case c : {Case{DataType::kF32, ReduceOp::kSum, (1u << 20) + 3}, Case{DataType::kF64, ReduceOp::kAvg, 100003},
                 Case{DataType::kF16, ReduceOp::kSum, 65536}, Case{DataType::kBF16, ReduceOp::kMax, 4097},
                 Case{DataType::kI32, ReduceOp::kMin, 1}, Case{DataType::kI64, ReduceOp::kProd, 4099}}) {
    size_t es = dataTypeSize(c.t);
    std::vector<char> in(c.count * es), out(c.count * es);
    for (size_t j = 0; j < c.count; ++j) store(in, j, c.t, inputValue(me, j, c.op));
    Row row{"allreduce", dataTypeName(c.t), reduceOpName(c.op), "", c.count, 0, 0, ""};
    Status st = timed([&] { return comm.allreduce(in.data(), out.data(), c.count, c.t, c.op); }, iters, &row);
    if (!st.isOk()) row.error = st.toString();
    for (size_t j = 0; j < c.count && st.isOk(); ++j)
      row.wrong += !closeEnough(load(out, j, c.t), reduceReference(n, j, c.op, c.t), c.t);
    rows.push_back(row);
  }
  {
    size_t count = 250000;
    std::vector<char> in(count * 4), out(count * 4 * n);
    for (size_t j = 0; j < count; ++j) store(in, j, DataType::kF32, me * 1000.0 + j % 100);
    Row row{"allgather", "f32", "-", "", count, 0, 0, ""};
    Status st = timed([&] { return comm.allgather(in.data(), out.data(), count, DataType::kF32); }, iters, &row);
    if (!st.isOk()) row.error = st.toString();
    for (int r = 0; r < n && st.isOk(); ++r)
      for (size_t j = 0; j < count; ++j) row.wrong += load(out, r * count + j, DataType::kF32) != r * 1000.0 + j % 100;
    rows.push_back(row);
  }
  {
    size_t count = 250000;
    std::vector<char> in(count * 4 * n), out(count * 4);
    for (size_t j = 0; j < count * n; ++j) store(in, j, DataType::kF32, inputValue(me, j, ReduceOp::kSum));
    Row row{"reduce_scatter", "f32", "sum", "", count, 0, 0, ""};
    Status st = timed([&] { return comm.reduceScatter(in.data(), out.data(), count, DataType::kF32, ReduceOp::kSum); },
                      iters, &row);
    if (!st.isOk()) row.error = st.toString();
    for (size_t j = 0; j < count && st.isOk(); ++j)
      row.wrong += !closeEnough(load(out, j, DataType::kF32),
                                reduceReference(n, me * count + j, ReduceOp::kSum, DataType::kF32), DataType::kF32);
    rows.push_back(row);
  }
  {
    size_t count = 500000;
    int root = n - 1;
    std::vector<char> buf(count * 8);
    Row row{"broadcast", "i64", "-", "", count, 0, 0, ""};
    Status st = timed(
        [&] {
          for (size_t j = 0; j < count; ++j) store(buf, j, DataType::kI64, me == root ? static_cast<double>(j) : -1.0);
          return comm.broadcast(buf.data(), buf.data(), count, DataType::kI64, root);
        },
        iters, &row);
    if (!st.isOk()) row.error = st.toString();
    for (size_t j = 0; j < count && st.isOk(); ++j) row.wrong += load(buf, j, DataType::kI64) != static_cast<double>(j);
    rows.push_back(row);
  }
  {
    Row row{"barrier", "-", "-", "", 0, 0, 0, ""};
    Status st = timed([&] { return comm.barrier(); }, iters, &row);
    if (!st.isOk()) row.error = st.toString();
    rows.push_back(row);
  }

  // Every rank's wrong counts and failures reach rank 0 through one more allreduce.
  std::vector<int64_t> wrong(rows.size()), total(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) wrong[i] = rows[i].wrong + (rows[i].error.empty() ? 0 : 1000000);
  auto req = comm.allreduce(wrong.data(), total.data(), wrong.size(), DataType::kI64, ReduceOp::kSum);
  Status st = req.isOk() ? req.value()->wait() : req.status();
  if (!st.isOk()) {
    std::fprintf(stderr, "tsr-check: could not collect results: %s\n", st.toString().c_str());
    return 1;
  }
  int64_t bad = 0;
  if (me == 0) {
    std::printf("tessera check: %d ranks, UCX transport, %d iterations per case (median time)\n", n, iters);
    std::printf("%-15s %-5s %-5s %-13s %10s %12s %8s  %s\n", "collective", "type", "op", "algo", "count", "time(us)",
                "#wrong", "result");
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      bool ok = total[i] == 0;
      std::printf("%-15s %-5s %-5s %-13s %10zu %12.1f %8lld  %s\n", r.collective.c_str(), r.dtype.c_str(), r.op.c_str(),
                  r.algo.c_str(), r.count, r.usMedian, static_cast<long long>(total[i] % 1000000),
                  ok ? "OK" : (r.error.empty() ? "WRONG" : r.error.c_str()));
      bad += ok ? 0 : 1;
    }
    std::printf("%s: %zu cases, %lld failed\n", bad ? "FAILED" : "PASSED", rows.size(), static_cast<long long>(bad));
  } else {
    for (int64_t t : total) bad += t != 0;
  }
  return bad ? 1 : 0;
}
