// fault_worker's "full" mode: every collective, dtype and op, in and out of place, with
// awkward counts, checked against the float64 reference of tests/support/values.h. Prints
// "rank R: OK <cases>" or the first wrong cases, and exits non-zero on any.
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/communicator.h"
#include "tests/support/values.h"

namespace {

using namespace tsr;
using runtime::Communicator;
using testing::inputValue;
using testing::loadValue;
using testing::storeValue;

constexpr DataType kTypes[] = {DataType::kF32, DataType::kF64, DataType::kF16,
                               DataType::kBF16, DataType::kI32, DataType::kI64};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax,
                             ReduceOp::kProd};

struct Tally {
  int rank;
  long cases = 0, bad = 0;
  void fail(const std::string& what) {
    if (++bad <= 5) std::printf("rank %d: WRONG %s\n", rank, what.c_str());
  }
};

std::string name(const char* c, DataType t, const char* op, size_t count, bool inPlace) {
  return std::string(c) + " " + dataTypeName(t) + " " + op + " count " + std::to_string(count) +
         (inPlace ? " in-place" : "");
}

void allreduce(Communicator& comm, Tally& tally, DataType t, ReduceOp op, size_t count, bool inPlace) {
  size_t es = dataTypeSize(t);
  std::vector<char> in(count * es + 1), out(count * es + 1);
  for (size_t j = 0; j < count; ++j) storeValue(in.data(), j, t, inputValue(comm.rank(), j, op));
  void* dst = inPlace ? in.data() : out.data();
  std::string what = name("allreduce", t, reduceOpName(op), count, inPlace);
  ++tally.cases;
  auto req = comm.allreduce(in.data(), dst, count, t, op);
  Status st = req.isOk() ? req.value()->wait() : req.status();
  if (!st.isOk()) return tally.fail(what + ": " + st.toString());
  for (size_t j = 0; j < count; ++j)
    if (!testing::closeEnough(loadValue(dst, j, t), testing::reduceReference(comm.size(), j, op, t), t))
      return tally.fail(what + " element " + std::to_string(j));
}

void reduceScatter(Communicator& comm, Tally& tally, DataType t, ReduceOp op, size_t count) {
  size_t es = dataTypeSize(t);
  int n = comm.size();
  std::vector<char> in(count * n * es + 1), out(count * es + 1);
  for (size_t j = 0; j < count * n; ++j) storeValue(in.data(), j, t, inputValue(comm.rank(), j, op));
  std::string what = name("reduce_scatter", t, reduceOpName(op), count, false);
  ++tally.cases;
  auto req = comm.reduceScatter(in.data(), out.data(), count, t, op);
  Status st = req.isOk() ? req.value()->wait() : req.status();
  if (!st.isOk()) return tally.fail(what + ": " + st.toString());
  for (size_t j = 0; j < count; ++j) {
    double want = testing::reduceReference(n, comm.rank() * count + j, op, t);
    if (!testing::closeEnough(loadValue(out.data(), j, t), want, t))
      return tally.fail(what + " element " + std::to_string(j));
  }
}

void allgatherAndBroadcast(Communicator& comm, Tally& tally, DataType t, size_t count) {
  size_t es = dataTypeSize(t);
  int n = comm.size(), me = comm.rank();
  std::vector<char> in(count * es + 1), out(count * n * es + 1);
  for (size_t j = 0; j < count; ++j) storeValue(in.data(), j, t, me * 10 + static_cast<double>(j % 9));
  ++tally.cases;
  auto req = comm.allgather(in.data(), out.data(), count, t);
  Status st = req.isOk() ? req.value()->wait() : req.status();
  if (!st.isOk()) return tally.fail(name("allgather", t, "-", count, false) + ": " + st.toString());
  for (int r = 0; r < n; ++r)
    for (size_t j = 0; j < count; ++j)
      if (loadValue(out.data(), r * count + j, t) != r * 10 + static_cast<double>(j % 9))
        return tally.fail(name("allgather", t, "-", count, false));
  int root = static_cast<int>(count % n);
  for (size_t j = 0; j < count; ++j) storeValue(in.data(), j, t, me == root ? static_cast<double>(j % 11) : -1.0);
  ++tally.cases;
  req = comm.broadcast(in.data(), in.data(), count, t, root);
  st = req.isOk() ? req.value()->wait() : req.status();
  if (!st.isOk()) return tally.fail(name("broadcast", t, "-", count, true) + ": " + st.toString());
  for (size_t j = 0; j < count; ++j)
    if (loadValue(in.data(), j, t) != static_cast<double>(j % 11))
      return tally.fail(name("broadcast", t, "-", count, true));
}

}  // namespace

int runFull(Communicator& comm) {
  Tally tally{comm.rank()};
  int n = comm.size();
  std::vector<size_t> counts{0, 1, static_cast<size_t>(n + 1), 4099};
  for (DataType t : kTypes) {
    for (ReduceOp op : kOps)
      for (size_t count : counts) {
        allreduce(comm, tally, t, op, count, false);
        allreduce(comm, tally, t, op, count, true);
        reduceScatter(comm, tally, t, op, count);
      }
    for (size_t count : counts) allgatherAndBroadcast(comm, tally, t, count);
  }
  allreduce(comm, tally, DataType::kF32, ReduceOp::kSum, (size_t{1} << 20) + 3, true);
  ++tally.cases;
  auto req = comm.barrier();
  Status st = req.isOk() ? req.value()->wait() : req.status();
  if (!st.isOk()) tally.fail("barrier: " + st.toString());
  std::printf("rank %d: %s %ld cases, %ld wrong\n", comm.rank(), tally.bad ? "FAILED" : "OK",
              tally.cases, tally.bad);
  return tally.bad ? 1 : 0;
}
