// The dtype x op matrix at plan level: every dense builder (ring, Rabenseifner, doubling, hier on
// one-host / one-rank-per-host / two-per-host grids, torus where N has a grid; ring and Bruck
// all-gather, ring reduce-scatter, binomial broadcast) for N = 1..8, 11, 16, every dtype and
// op it takes (the integers the bitwise ones too), counts 0, 1, N-1, N+1, checked against the float64 reference of
// base/reference_values.h (the one tsr-bench and the runtime tests use), plus one 2^20+3 run per builder. Every output
// buffer has a sentinel element past its end; out-of-place runs check that the input is left alone.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>

#include "algorithms/dense/dense_plans.h"
#include "algorithms/dense/tests/plan_world.h"
#include "base/reference_values.h"

namespace tsr::algorithms {
namespace dtype_matrix_test {  // named, not anonymous: the test binary is a unity build

using namespace tsr::algorithms::testing;
using reference::closeEnough;
using reference::inputValue;
using reference::loadValue;
using reference::reduceReference;
using reference::storeValue;

constexpr auto& kTypes = reference::kAllTypes;
constexpr size_t kBig = (size_t{1} << 20) + 3;
constexpr double kSentinel = 77;  // fits every dtype exactly; no reference value is 77

std::vector<size_t> smallCounts(int n) {
  return {0, 1, static_cast<size_t>(std::max(1, n - 1)), static_cast<size_t>(n + 1)};
}

std::string where(const std::string& algo, int n, DataType t, ReduceOp op, size_t count, bool inPlace) {
  return algo + " N=" + std::to_string(n) + " " + dataTypeName(t) + " " + reduceOpName(op) + " count " +
         std::to_string(count) + (inPlace ? " in-place" : " out-of-place");
}

// Small counts with tiny chunks (several chunks per block even at N+1 elements, a window of
// two staging chunks); the big count with the runtime's defaults.
DenseOptions optionsFor(size_t count) {
  DenseOptions opts;
  if (count < 1000) {
    opts.chunkBytes = 8;
    opts.window = 2;
  }
  return opts;
}

// Grid with x ranks per row (host) and y rows, rows reversed and rotated so that neither a row
// nor the grid is in rank order (as in the torus / hier tests).
std::vector<std::vector<int>> gridOf(int x, int y) {
  std::vector<std::vector<int>> grid(y, std::vector<int>(x));
  for (int r = 0; r < y; ++r)
    for (int c = 0; c < x; ++c) grid[r][c] = r * x + c;
  std::reverse(grid.begin(), grid.end());
  for (auto& row : grid) std::rotate(row.begin(), row.begin() + 1, row.end());
  return grid;
}

using AllreduceBuild = std::function<Result<std::shared_ptr<Plan>>(int rank, size_t count, DataType t, ReduceOp op,
                                                                   const DenseOptions& opts)>;

struct Builder {
  std::string label;      // for messages: "hier 2x3"
  std::string algorithm;  // Plan::algorithm
  AllreduceBuild build;
  bool big;  // run the 2^20+3 case too
};

std::vector<Builder> allreduceBuilders(int n) {
  std::vector<Builder> b;
  // Ring and Rabenseifner at 2^20+3 are in dense_plans_test / recursive_plans_test already.
  b.push_back({"ring", "ring",
               [n](int r, size_t c, DataType t, ReduceOp op, const DenseOptions& o) {
                 return ringAllreducePlan(r, n, c, t, op, o);
               },
               false});
  // The ring reducing on arrival (the transport's consumer path, no staging): the same
  // results, from every receive posted at once.
  b.push_back({"ring on arrival", "ring",
               [n](int r, size_t c, DataType t, ReduceOp op, const DenseOptions& o) {
                 DenseOptions arrival = o;
                 arrival.reduceOnArrival = true;
                 return ringAllreducePlan(r, n, c, t, op, arrival);
               },
               true});
  b.push_back({"rabenseifner", "rabenseifner",
               [n](int r, size_t c, DataType t, ReduceOp op, const DenseOptions& o) {
                 return rabenseifnerAllreducePlan(r, n, c, t, op, o);
               },
               false});
  b.push_back({"doubling", "doubling",
               [n](int r, size_t c, DataType t, ReduceOp op, const DenseOptions& o) {
                 return doublingAllreducePlan(r, n, c, t, op, o);
               },
               true});
  auto hier = [&](int x, int y) {
    auto grid = gridOf(x, y);
    b.push_back({"hier " + std::to_string(x) + "x" + std::to_string(y), "hier",
                 [n, grid](int r, size_t c, DataType t, ReduceOp op, const DenseOptions& o) {
                   return hierAllreducePlan(r, n, c, t, op, grid, o);
                 },
                 true});
  };
  hier(n, 1);             // one host
  if (n > 1) hier(1, n);  // one rank per host
  if (n >= 4 && n % 2 == 0) hier(2, n / 2);
  if (n >= 4 && n % 2 == 0) {  // torus: two ranks per host, and N/2 per host on two hosts
    std::vector<std::pair<int, int>> shapes = {{2, n / 2}};
    if (n / 2 != 2) shapes.push_back({n / 2, 2});
    for (auto [x, y] : shapes) {
      auto grid = gridOf(x, y);
      b.push_back({"torus " + std::to_string(x) + "x" + std::to_string(y), "torus",
                   [n, grid](int r, size_t c, DataType t, ReduceOp op, const DenseOptions& o) {
                     return torusAllreducePlan(r, n, c, t, op, grid, o);
                   },
                   x == 2});
    }
  }
  return b;
}

// Elements to check: all of a small buffer; every 997th of a big one and its last few (the
// tails of the odd block and of the last chunk).
std::vector<size_t> sampled(size_t count) {
  std::vector<size_t> idx;
  size_t step = count > 1000 ? 997 : 1;
  for (size_t j = 0; j < count; j += step) idx.push_back(j);
  for (size_t j = count > 1000 ? count - 5 : count; j < count; ++j) idx.push_back(j);
  return idx;
}

// One allreduce on every rank, checked on every rank (fatal failure on the first wrong value).
void runAllreduce(int n, const Builder& b, DataType t, ReduceOp op, size_t count, bool inPlace) {
  World& world = worldOf(n);
  size_t esize = dataTypeSize(t);
  std::vector<std::vector<char>> in(n, std::vector<char>((count + 1) * esize)), out = in;
  std::vector<std::shared_ptr<Plan>> plans;
  std::vector<RunBuffers> bufs;
  std::string what = where(b.label, n, t, op, count, inPlace);
  for (int r = 0; r < n; ++r) {
    for (size_t j = 0; j < count; ++j) storeValue(in[r].data(), j, t, inputValue(r, j, op));
    storeValue(in[r].data(), count, t, kSentinel);
    storeValue(out[r].data(), count, t, kSentinel);
    auto p = b.build(r, count, t, op, optionsFor(count));
    ASSERT_TRUE(p.isOk()) << what << ": " << p.status().toString();
    ASSERT_EQ(p.value()->algorithm, b.algorithm) << what;
    plans.push_back(p.take());
    bufs.push_back({in[r].data(), inPlace ? in[r].data() : out[r].data(), nullptr});
  }
  for (const Status& s : runAll(world, plans, bufs)) ASSERT_TRUE(s.isOk()) << what << ": " << s.toString();
  for (int r = 0; r < n; ++r) {
    const char* dst = inPlace ? in[r].data() : out[r].data();
    for (size_t j : sampled(count)) {
      double want = reduceReference(n, j, op, t), got = loadValue(dst, j, t);
      ASSERT_TRUE(closeEnough(got, want, t))
          << what << " rank " << r << " element " << j << ": got " << got << " want " << want;
    }
    ASSERT_EQ(loadValue(dst, count, t), kSentinel) << what << ": wrote past the end on rank " << r;
    if (!inPlace) {
      for (size_t j : sampled(count))
        ASSERT_EQ(loadValue(in[r].data(), j, t), inputValue(r, j, op)) << what << ": input changed";
    }
  }
}

// All-gather values: distinct per rank and position, exact in every dtype (f16 / bf16 hold
// integers up to 2048 / 256 exactly, f32 up to 2^24).
double gatherValue(int rank, size_t j, DataType t) {
  if (t == DataType::kF16 || t == DataType::kBF16) return rank * 13.0 + static_cast<double>(j % 11);
  return rank * 65536.0 + static_cast<double>(j % 65521);
}

using GatherBuild =
    std::function<Result<std::shared_ptr<Plan>>(int rank, int n, size_t count, DataType t, const DenseOptions& opts)>;

void runAllgather(int n, const std::string& algo, const GatherBuild& build, DataType t, size_t count, bool inPlace) {
  World& world = worldOf(n);
  size_t esize = dataTypeSize(t);
  std::vector<std::vector<char>> in(n, std::vector<char>((count + 1) * esize)),
      out(n, std::vector<char>((count * n + 1) * esize));
  std::vector<std::shared_ptr<Plan>> plans;
  std::vector<RunBuffers> bufs;
  std::string what = where(algo, n, t, ReduceOp::kSum, count, inPlace);
  for (int r = 0; r < n; ++r) {
    // In place (MPI style): the input is this rank's own block of the output.
    char* src = inPlace ? out[r].data() + r * count * esize : in[r].data();
    for (size_t j = 0; j < count; ++j) storeValue(src, j, t, gatherValue(r, j, t));
    storeValue(out[r].data(), count * n, t, kSentinel);
    auto p = build(r, n, count, t, optionsFor(count));
    ASSERT_TRUE(p.isOk()) << what << ": " << p.status().toString();
    ASSERT_EQ(p.value()->algorithm, algo) << what;
    plans.push_back(p.take());
    bufs.push_back({src, out[r].data(), nullptr});
  }
  for (const Status& s : runAll(world, plans, bufs)) ASSERT_TRUE(s.isOk()) << what << ": " << s.toString();
  for (int r = 0; r < n; ++r) {
    for (int b = 0; b < n; ++b)
      for (size_t j : sampled(count))
        ASSERT_EQ(loadValue(out[r].data(), b * count + j, t), gatherValue(b, j, t))
            << what << " rank " << r << " block " << b << " element " << j;
    ASSERT_EQ(loadValue(out[r].data(), count * n, t), kSentinel) << what << ": wrote past the end on rank " << r;
  }
}

// Where reduce-scatter writes its block: a separate buffer, the input's start (output ==
// input), or this rank's own block of the input.
enum class RsOutput { kSeparate, kSameBuffer, kOwnBlock };

void runReduceScatter(int n, DataType t, ReduceOp op, size_t count, RsOutput at, bool onArrival = false) {
  World& world = worldOf(n);
  size_t esize = dataTypeSize(t);
  std::vector<std::vector<char>> in(n, std::vector<char>((count * n + 1) * esize)),
      out(n, std::vector<char>((count + 1) * esize));
  std::vector<std::shared_ptr<Plan>> plans;
  std::vector<RunBuffers> bufs;
  std::string what = where(onArrival ? "ring reduce_scatter on arrival" : "ring reduce_scatter", n, t, op, count,
                           at != RsOutput::kSeparate) +
                     (at == RsOutput::kOwnBlock ? " (own block)" : "");
  std::vector<char*> dst(n);
  for (int r = 0; r < n; ++r) {
    for (size_t j = 0; j < count * n; ++j) storeValue(in[r].data(), j, t, inputValue(r, j, op));
    storeValue(in[r].data(), count * n, t, kSentinel);
    storeValue(out[r].data(), count, t, kSentinel);
    dst[r] = at == RsOutput::kSeparate     ? out[r].data()
             : at == RsOutput::kSameBuffer ? in[r].data()
                                           : in[r].data() + r * count * esize;
    DenseOptions opts = optionsFor(count);
    opts.reduceOnArrival = onArrival;
    auto p = ringReduceScatterPlan(r, n, count, t, op, opts);
    ASSERT_TRUE(p.isOk()) << what << ": " << p.status().toString();
    plans.push_back(p.take());
    bufs.push_back({in[r].data(), dst[r], nullptr});
  }
  for (const Status& s : runAll(world, plans, bufs)) ASSERT_TRUE(s.isOk()) << what << ": " << s.toString();
  for (int r = 0; r < n; ++r) {
    for (size_t j : sampled(count)) {
      double want = reduceReference(n, r * count + j, op, t), got = loadValue(dst[r], j, t);
      ASSERT_TRUE(closeEnough(got, want, t))
          << what << " rank " << r << " element " << j << ": got " << got << " want " << want;
    }
    ASSERT_EQ(loadValue(in[r].data(), count * n, t), kSentinel) << what << ": wrote past the end on rank " << r;
    if (at == RsOutput::kSeparate) {
      ASSERT_EQ(loadValue(out[r].data(), count, t), kSentinel) << what << ": wrote past the end on rank " << r;
      for (size_t j : sampled(count * n))
        ASSERT_EQ(loadValue(in[r].data(), j, t), inputValue(r, j, op)) << what << ": input changed";
    }
  }
}

// Binomial broadcast out of place from `root`: every rank's output gets the root's input, the
// inputs stay as they were.
void runBroadcast(int n, DataType t, size_t count, int root) {
  World& world = worldOf(n);
  size_t esize = dataTypeSize(t);
  std::vector<std::vector<char>> in(n, std::vector<char>((count + 1) * esize)), out = in;
  std::vector<std::shared_ptr<Plan>> plans;
  std::vector<RunBuffers> bufs;
  std::string what = where("binomial broadcast root " + std::to_string(root), n, t, ReduceOp::kSum, count, false);
  for (int r = 0; r < n; ++r) {
    for (size_t j = 0; j < count; ++j) storeValue(in[r].data(), j, t, r == root ? gatherValue(r, j, t) : -1.0);
    storeValue(out[r].data(), count, t, kSentinel);
    auto p = binomialBroadcastPlan(r, n, root, count, t, optionsFor(count));
    ASSERT_TRUE(p.isOk()) << what << ": " << p.status().toString();
    plans.push_back(p.take());
    bufs.push_back({in[r].data(), out[r].data(), nullptr});
  }
  for (const Status& s : runAll(world, plans, bufs)) ASSERT_TRUE(s.isOk()) << what << ": " << s.toString();
  for (int r = 0; r < n; ++r) {
    for (size_t j : sampled(count)) {
      ASSERT_EQ(loadValue(out[r].data(), j, t), gatherValue(root, j, t)) << what << " rank " << r << " element " << j;
      ASSERT_EQ(loadValue(in[r].data(), j, t), r == root ? gatherValue(r, j, t) : -1.0) << what << ": input changed";
    }
    ASSERT_EQ(loadValue(out[r].data(), count, t), kSentinel) << what << ": wrote past the end on rank " << r;
  }
}

class DtypeMatrix : public ::testing::TestWithParam<int> {};

TEST_P(DtypeMatrix, AllreduceEveryBuilderDtypeOpAndCount) {
  int n = GetParam();
  for (const Builder& b : allreduceBuilders(n)) {
    for (DataType t : kTypes)
      for (ReduceOp op : reference::opsFor(t))
        for (size_t count : smallCounts(n)) {
          runAllreduce(n, b, t, op, count, (count + static_cast<size_t>(op)) % 2 == 0);
          if (::testing::Test::HasFatalFailure()) return;
        }
    if (b.big) {
      runAllreduce(n, b, DataType::kF32, ReduceOp::kAvg, kBig, true);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// Big counts per rank only for N <= 8: at N = 16 a 2^20+3 f32 all-gather is 64 MiB of output
// per rank (1 GiB for the job), and the same for reduce-scatter's input: too slow for CI, and
// N = 11, 16 add nothing at that size that N = 5..8 do not already exercise.
TEST_P(DtypeMatrix, RingAndBruckAllgatherEveryDtypeAndCount) {
  int n = GetParam();
  const std::pair<std::string, GatherBuild> algos[] = {
      {"ring", [](int r, int size, size_t c, DataType t,
                  const DenseOptions& o) { return ringAllgatherPlan(r, size, c, t, o); }},
      {"bruck", [](int r, int size, size_t c, DataType t, const DenseOptions& o) {
         return bruckAllgatherPlan(r, size, c, t, o);
       }}};
  for (const auto& [algo, build] : algos) {
    for (DataType t : kTypes)
      for (size_t count : smallCounts(n))
        for (bool inPlace : {false, true}) {
          runAllgather(n, algo, build, t, count, inPlace);
          if (::testing::Test::HasFatalFailure()) return;
        }
    if (n <= 8) {
      runAllgather(n, algo, build, DataType::kF32, kBig, n % 2 == 0);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST_P(DtypeMatrix, RingReduceScatterEveryDtypeOpAndCount) {
  int n = GetParam();
  int i = 0;
  for (DataType t : kTypes)
    for (ReduceOp op : reference::opsFor(t))
      for (size_t count : smallCounts(n)) {
        runReduceScatter(n, t, op, count, static_cast<RsOutput>(i % 3), i % 2 == 1);
        ++i;
        if (::testing::Test::HasFatalFailure()) return;
      }
  if (n <= 8)
    for (bool onArrival : {false, true})
      runReduceScatter(n, DataType::kF32, ReduceOp::kAvg, kBig, static_cast<RsOutput>(n % 3), onArrival);
}

TEST_P(DtypeMatrix, BinomialBroadcastEveryDtypeAndCount) {
  int n = GetParam();
  for (DataType t : kTypes)
    for (size_t count : smallCounts(n)) {
      runBroadcast(n, t, count, static_cast<int>((count + static_cast<size_t>(t)) % n));
      if (::testing::Test::HasFatalFailure()) return;
    }
  if (n <= 8) runBroadcast(n, DataType::kF32, kBig, n - 1);
}

// The edges (1, 2, non-powers of two with the smallest and the largest remainder, the largest)
// here, the rest in the full tier (tsr_add_gtest).
INSTANTIATE_TEST_SUITE_P(Ranks, DtypeMatrix, ::testing::Values(1, 2, 3, 7, 16),
                         [](const auto& info) { return "N" + std::to_string(info.param); });
INSTANTIATE_TEST_SUITE_P(FullRanks, DtypeMatrix, ::testing::Values(4, 5, 6, 8, 11),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

}  // namespace dtype_matrix_test
}  // namespace tsr::algorithms
