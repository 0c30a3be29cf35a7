// fault_worker's "full" mode: every collective, dtype and op, in and out of place (reduce-scatter
// also with its output at the start or at this rank's block of its input), with
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

constexpr auto& kTypes = reference::kAllTypes;

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

// Out of place, or in place with the output at the start of the input buffer (sameBuffer) or
// at this rank's own block of it.
enum class RsOutput { kSeparate, kSameBuffer, kOwnBlock };

void reduceScatter(Communicator& comm, Tally& tally, DataType t, ReduceOp op, size_t count, RsOutput where) {
  size_t es = dataTypeSize(t);
  int n = comm.size();
  std::vector<char> in(count * n * es + 1), out(count * es + 1);
  for (size_t j = 0; j < count * n; ++j) storeValue(in.data(), j, t, inputValue(comm.rank(), j, op));
  char* dst = where == RsOutput::kSeparate     ? out.data()
              : where == RsOutput::kSameBuffer ? in.data()
                                               : in.data() + comm.rank() * count * es;
  std::string what = name("reduce_scatter", t, reduceOpName(op), count, where != RsOutput::kSeparate) +
                     (where == RsOutput::kOwnBlock ? " (own block)" : "");
  ++tally.cases;
  auto req = comm.reduceScatter(in.data(), dst, count, t, op);
  Status st = req.isOk() ? req.value()->wait() : req.status();
  if (!st.isOk()) return tally.fail(what + ": " + st.toString());
  for (size_t j = 0; j < count; ++j) {
    double want = testing::reduceReference(n, comm.rank() * count + j, op, t);
    if (!testing::closeEnough(loadValue(dst, j, t), want, t)) return tally.fail(what + " element " + std::to_string(j));
  }
}

void allgather(Communicator& comm, Tally& tally, DataType t, size_t count, bool inPlace) {
  size_t es = dataTypeSize(t);
  int n = comm.size(), me = comm.rank();
  std::vector<char> in(count * es + 1), out(count * n * es + 1);
  // In place: this rank's contribution already sits at its block of the output.
  char* src = inPlace ? out.data() + me * count * es : in.data();
  for (size_t j = 0; j < count; ++j) storeValue(src, j, t, me * 10 + static_cast<double>(j % 9));
  std::string what = name("allgather", t, "-", count, inPlace);
  ++tally.cases;
  auto req = comm.allgather(src, out.data(), count, t);
  Status st = req.isOk() ? req.value()->wait() : req.status();
  if (!st.isOk()) return tally.fail(what + ": " + st.toString());
  for (int r = 0; r < n; ++r)
    for (size_t j = 0; j < count; ++j)
      if (loadValue(out.data(), r * count + j, t) != r * 10 + static_cast<double>(j % 9))
        return tally.fail(what + " block " + std::to_string(r) + " element " + std::to_string(j));
}

// In place (one buffer) or out of place (the root reads `in`, every rank writes `out`; the
// inputs stay untouched).
void broadcast(Communicator& comm, Tally& tally, DataType t, size_t count, bool inPlace) {
  size_t es = dataTypeSize(t);
  int n = comm.size(), me = comm.rank();
  int root = static_cast<int>((count + (inPlace ? 0 : 1)) % n);
  std::vector<char> in(count * es + 1), out(count * es + 1);
  for (size_t j = 0; j < count; ++j) {
    storeValue(in.data(), j, t, me == root ? static_cast<double>(j % 11) : -1.0);
    storeValue(out.data(), j, t, -2.0);
  }
  char* dst = inPlace ? in.data() : out.data();
  std::string what = name("broadcast", t, "-", count, inPlace) + " root " + std::to_string(root);
  ++tally.cases;
  auto req = comm.broadcast(in.data(), dst, count, t, root);
  Status st = req.isOk() ? req.value()->wait() : req.status();
  if (!st.isOk()) return tally.fail(what + ": " + st.toString());
  for (size_t j = 0; j < count; ++j)
    if (loadValue(dst, j, t) != static_cast<double>(j % 11)) return tally.fail(what + " element " + std::to_string(j));
  if (!inPlace)
    for (size_t j = 0; j < count; ++j)
      if (loadValue(in.data(), j, t) != (me == root ? static_cast<double>(j % 11) : -1.0))
        return tally.fail(what + ": input changed at element " + std::to_string(j));
}

}  // namespace

int runFull(Communicator& comm) {
  Tally tally{comm.rank()};
  int n = comm.size();
  std::vector<size_t> counts{0, 1, static_cast<size_t>(n + 1), 4099};
  for (DataType t : kTypes) {
    for (ReduceOp op : reference::opsFor(t))
      for (size_t count : counts) {
        allreduce(comm, tally, t, op, count, false);
        allreduce(comm, tally, t, op, count, true);
        for (RsOutput where : {RsOutput::kSeparate, RsOutput::kSameBuffer, RsOutput::kOwnBlock})
          reduceScatter(comm, tally, t, op, count, where);
      }
    for (size_t count : counts)
      for (bool inPlace : {false, true}) {
        allgather(comm, tally, t, count, inPlace);
        broadcast(comm, tally, t, count, inPlace);
      }
  }
  allreduce(comm, tally, DataType::kF32, ReduceOp::kSum, (size_t{1} << 20) + 3, true);
  ++tally.cases;
  auto req = comm.barrier();
  Status st = req.isOk() ? req.value()->wait() : req.status();
  if (!st.isOk()) tally.fail("barrier: " + st.toString());
  std::printf("rank %d: %s %ld cases, %ld wrong\n", comm.rank(), tally.bad ? "FAILED" : "OK", tally.cases, tally.bad);
  return tally.bad ? 1 : 0;
}
