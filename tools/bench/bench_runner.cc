#include "tools/bench/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "base/reference_values.h"
#include "tools/bench/bench_common.h"

namespace tsr::tools::bench {

namespace {

using Clock = std::chrono::steady_clock;
using reference::inputValue;
using reference::loadValue;
using reference::storeValue;

struct Buffers {
  size_t count;  // elements per rank (the collective's count argument)
  std::vector<char> in, out;
};

Buffers makeBuffers(Collective c, size_t bytes, size_t esize, int n) {
  Buffers b;
  size_t total = bytes / esize;
  switch (c) {
    case Collective::kAllreduce:
    case Collective::kBroadcast:
      b.count = total;
      b.in.resize(total * esize + 1);
      break;
    case Collective::kAllgather:
      b.count = total / n;
      b.in.resize(b.count * esize + 1);
      b.out.resize(b.count * n * esize + 1);
      break;
    case Collective::kReduceScatter:
      b.count = total / n;
      b.in.resize(b.count * n * esize + 1);
      b.out.resize(b.count * esize + 1);
      break;
  }
  return b;
}

// Every input value depends on the element index only modulo 2, 7, 9 or 13 (inputValue, and
// the broadcast and all-gather patterns below), so one period of kPeriod elements, copied
// over the buffer, is the whole input: a per-element fill of 64 MiB took longer than the
// collective it prepares.
constexpr size_t kPeriod = 2 * 7 * 9 * 13;

// Copies the first `period` elements of `data` over the rest (count elements of esize bytes).
void replicate(char* data, size_t count, size_t esize, size_t period) {
  for (size_t filled = period; filled < count; filled *= 2)
    std::memcpy(data + filled * esize, data, std::min(filled, count - filled) * esize);
}

void fill(Buffers& b, const BenchOptions& o, int rank, int n) {
  size_t inCount = o.collective == Collective::kReduceScatter ? b.count * n : b.count;
  size_t first = std::min(inCount, kPeriod);
  for (size_t j = 0; j < first; ++j) {
    double v = o.collective == Collective::kBroadcast   ? (rank == 0 ? static_cast<double>(j % 13) : -1.0)
               : o.collective == Collective::kAllgather ? rank * 10.0 + static_cast<double>(j % 9)
                                                        : inputValue(rank, j, o.op);
    storeValue(b.in.data(), j, o.dtype, v);
  }
  replicate(b.in.data(), inCount, dataTypeSize(o.dtype), first);
}

// The reduced value of element g, from a table of one period (reduceReference sums n ranks).
class ReducedValues {
 public:
  ReducedValues(int n, const BenchOptions& o) {
    for (size_t j = 0; j < kPeriod; ++j) table_[j] = reference::reduceReference(n, j, o.op, o.dtype);
  }
  double at(size_t g) const { return table_[g % kPeriod]; }

 private:
  double table_[kPeriod];
};

// Counts the elements of data[0, count) (type t) not closeEnough to expected(first + j), where
// expected(g) repeats every kPeriod elements: a block equal byte for byte to one period of the
// expected values (each checked once) is right as a whole, and only blocks that differ are
// checked element by element. (Element by element throughout took longer than the collective.)
template <typename Expected>
int64_t countWrongPeriodic(const char* data, size_t count, DataType t, size_t first, Expected expected) {
  const size_t esize = dataTypeSize(t), period = std::min(count, kPeriod);
  std::vector<char> want(period * esize);
  bool wantIsRight = true;
  for (size_t j = 0; j < period; ++j) {
    double w = expected(first + j);
    storeValue(want.data(), j, t, w);
    wantIsRight = wantIsRight && reference::closeEnough(loadValue(want.data(), j, t), w, t);
  }
  int64_t wrong = 0;
  for (size_t start = 0; start < count; start += period) {
    size_t len = std::min(period, count - start);
    if (wantIsRight && std::memcmp(data + start * esize, want.data(), len * esize) == 0) continue;
    for (size_t j = start; j < start + len; ++j)
      wrong += !reference::closeEnough(loadValue(data, j, t), expected(first + j), t);
  }
  return wrong;
}

int64_t countWrong(const Buffers& b, const BenchOptions& o, int rank, int n) {
  const DataType t = o.dtype;
  switch (o.collective) {
    case Collective::kAllreduce: {
      auto reduced = std::make_unique<ReducedValues>(n, o);
      return countWrongPeriodic(b.in.data(), b.count, t, 0, [&](size_t g) { return reduced->at(g); });
    }
    case Collective::kBroadcast:
      return countWrongPeriodic(b.in.data(), b.count, t, 0, [](size_t g) { return static_cast<double>(g % 13); });
    case Collective::kAllgather: {
      int64_t wrong = 0;
      for (int r = 0; r < n; ++r)
        wrong += countWrongPeriodic(b.out.data() + r * b.count * dataTypeSize(t), b.count, t, 0,
                                    [r](size_t g) { return r * 10.0 + static_cast<double>(g % 9); });
      return wrong;
    }
    case Collective::kReduceScatter: {
      auto reduced = std::make_unique<ReducedValues>(n, o);
      return countWrongPeriodic(b.out.data(), b.count, t, rank * b.count, [&](size_t g) { return reduced->at(g); });
    }
  }
  return 0;
}

Result<runtime::RequestPtr> post(runtime::Communicator& comm, Buffers& b, const BenchOptions& o) {
  switch (o.collective) {
    case Collective::kAllreduce:  // in place, like the peer benchmarks (MPI_IN_PLACE)
      return comm.allreduce(b.in.data(), b.in.data(), b.count, o.dtype, o.op);
    case Collective::kBroadcast:
      return comm.broadcast(b.in.data(), b.in.data(), b.count, o.dtype, 0);
    case Collective::kAllgather:
      return comm.allgather(b.in.data(), b.out.data(), b.count, o.dtype);
    case Collective::kReduceScatter:
      return comm.reduceScatter(b.in.data(), b.out.data(), b.count, o.dtype, o.op);
  }
  return Status(Code::kInternal, "unknown collective");
}

}  // namespace

Result<BenchRow> runSize(runtime::Communicator& comm, const BenchOptions& o, size_t bytes, const RunnerHooks& hooks) {
  const int n = comm.size(), me = comm.rank();
  const size_t esize = dataTypeSize(o.dtype);
  Buffers b = makeBuffers(o.collective, bytes, esize, n);
  BenchRow row;
  row.count = b.count;
  row.bytes = o.collective == Collective::kAllreduce || o.collective == Collective::kBroadcast ? b.count * esize
                                                                                               : b.count * n * esize;
  row.iters = o.iters;
  std::vector<double> times;
  double maxWire = 0;
  int64_t wrong = 0;
  for (int it = 0; it < o.warmup + o.iters; ++it) {
    fill(b, o, me, n);
    TSR_RETURN_IF_ERROR(waitFor(comm.barrier()));
    uint64_t sentBefore = comm.bytesSent();
    auto t0 = Clock::now();
    Status st = waitFor(post(comm, b, o), &row.algo);
    double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (!st.isOk()) {
      row.error = st.toString();
      return row;  // the communicator is broken now: the caller stops the sweep
    }
    double mine[2] = {us, static_cast<double>(comm.bytesSent() - sentBefore)}, most[2];
    TSR_RETURN_IF_ERROR(waitFor(comm.allreduce(mine, most, 2, DataType::kF64, ReduceOp::kMax)));
    if (it < o.warmup) continue;
    times.push_back(most[0]);
    maxWire = std::max(maxWire, most[1]);
    if (o.check) {
      if (me == hooks.plantWrongOnRank && b.count > 0) {  // the result's last element
        bool inPlace = o.collective == Collective::kAllreduce || o.collective == Collective::kBroadcast;
        size_t last = (o.collective == Collective::kAllgather ? b.count * n : b.count) - 1;
        storeValue((inPlace ? b.in : b.out).data(), last, o.dtype, 12345.0);
      }
      wrong += countWrong(b, o, me, n);
    }
  }
  int64_t total = 0;
  TSR_RETURN_IF_ERROR(waitFor(comm.allreduce(&wrong, &total, 1, DataType::kI64, ReduceOp::kSum)));
  row.itersUs = times;
  std::sort(times.begin(), times.end());
  size_t k = times.size();
  row.timeUs = k % 2 ? times[k / 2] : 0.5 * (times[k / 2 - 1] + times[k / 2]);
  row.minUs = times.front();
  row.maxUs = times.back();
  row.wireBytes = static_cast<uint64_t>(maxWire);
  row.wrong = o.check ? total : -1;
  return row;
}

}  // namespace tsr::tools::bench
