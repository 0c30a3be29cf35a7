// Mismatched arguments, ranks as threads over real UCX: every collective x every field that can
// differ x every route (messages between hosts, the shared-memory board, the shared-memory
// stages), with the odd rank first, last, or alone against the rest. Every rank must get
// TSR_ERR_MISMATCH naming the field and two ranks that called differently, and the next call
// must fail on every rank (the communicator is broken everywhere, not only where the
// difference was seen). Also: a collective called alike on every rank completes on every rank
// even when a later one is mismatched and its notice reaches a rank still running it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <regex>
#include <string>
#include <vector>

#include "runtime/communicator.h"
#include "tests/support/thread_world.h"

namespace tsr {
namespace {

using runtime::Communicator;

enum class Route { kMessages, kBoard, kStages };
enum class Kind { kAllreduce, kAllgather, kReduceScatter, kBroadcast, kBarrier };

const char* routeName(Route r) {
  switch (r) {
    case Route::kMessages:
      return "messages";
    case Route::kBoard:
      return "board";
    case Route::kStages:
      return "stages";
  }
  return "?";
}
const char* kindName(Kind k) {
  switch (k) {
    case Kind::kAllreduce:
      return "allreduce";
    case Kind::kAllgather:
      return "allgather";
    case Kind::kReduceScatter:
      return "reduce_scatter";
    case Kind::kBroadcast:
      return "broadcast";
    case Kind::kBarrier:
      return "barrier";
  }
  return "?";
}

// One rank's call: the collective and its arguments.
struct Call {
  Kind kind;
  size_t count;
  DataType dtype = DataType::kF32;
  ReduceOp op = ReduceOp::kSum;
  int root = 1;
};

// The call with `field` changed, as the odd ranks make it.
Call changed(Call c, const std::string& field) {
  if (field == "count") c.count += 1;
  if (field == "dtype") c.dtype = DataType::kF64;
  if (field == "op") c.op = ReduceOp::kMax;
  if (field == "root") c.root = 0;
  if (field == "collective") c.kind = c.kind == Kind::kAllreduce ? Kind::kReduceScatter : Kind::kAllreduce;
  return c;
}

Status post(Communicator& comm, const Call& c) {
  // Large enough for any of the calls (reduce_scatter's input is N blocks, f64).
  std::vector<char> in(8 * (c.count + 1) * comm.size(), 1), out(in.size());
  Result<runtime::RequestPtr> req = Status(Code::kInternal, "no call");
  switch (c.kind) {
    case Kind::kAllreduce:
      req = comm.allreduce(in.data(), out.data(), c.count, c.dtype, c.op);
      break;
    case Kind::kAllgather:
      req = comm.allgather(in.data(), out.data(), c.count, c.dtype);
      break;
    case Kind::kReduceScatter:
      req = comm.reduceScatter(in.data(), out.data(), c.count, c.dtype, c.op);
      break;
    case Kind::kBroadcast:
      req = comm.broadcast(in.data(), out.data(), c.count, c.dtype, c.root);
      break;
    case Kind::kBarrier:
      req = comm.barrier();
      break;
  }
  return req.isOk() ? req.value()->wait() : req.status();
}

// The fields each collective has.
std::vector<std::string> fieldsOf(Kind k) {
  switch (k) {
    case Kind::kAllreduce:
    case Kind::kReduceScatter:
      return {"count", "dtype", "op", "collective"};
    case Kind::kAllgather:
      return {"count", "dtype", "collective"};
    case Kind::kBroadcast:
      return {"count", "dtype", "root", "collective"};
    case Kind::kBarrier:
      return {"collective"};
  }
  return {};
}

// Element counts that take `route` (the board carries up to 4 KiB per rank; messages are
// tried small and large, as the cost model picks other algorithms for each).
std::vector<size_t> countsFor(Route route) {
  switch (route) {
    case Route::kBoard:
      return {8};
    case Route::kStages:
      return {100000};
    case Route::kMessages:
      return {8, 100000};
  }
  return {};
}

struct Case {
  Route route;
  int size;
  std::vector<int> odd;  // the ranks that call differently
};

// Runs `field` of `kind` on one fresh communicator per case and checks every rank's outcome.
void expectEveryRankTold(const Case& c, Kind kind, const std::string& field, size_t count) {
  Call base{kind, count};
  const std::string what = std::string(kindName(kind)) + " " + field + " count " + std::to_string(count) + " via " +
                           routeName(c.route) + ", N=" + std::to_string(c.size) + ", odd rank " +
                           std::to_string(c.odd.front()) + (c.odd.size() > 1 ? " and more" : "");
  std::vector<std::string> outcomes(c.size), after(c.size);
  auto isOdd = [&](int r) { return std::find(c.odd.begin(), c.odd.end(), r) != c.odd.end(); };
  testing::runRanksEach(
      c.size,
      [&](Communicator& comm) {
        const int r = comm.rank();
        Status st = post(comm, isOdd(r) ? changed(base, field) : base);
        outcomes[r] = st.toString();
        auto req = comm.barrier();
        after[r] = (req.isOk() ? req.value()->wait() : req.status()).toString();
      },
      [&](int rank) {
        testing::Settings s{{"TSR_TIMEOUT_MS", "20000"}, {"TSR_LOG_LEVEL", "off"}};
        if (c.route == Route::kMessages) s["TSR_TEST_HOST_ID"] = "h" + std::to_string(rank);
        return s;
      });
  const std::string differs = field + " differs: rank ([0-9]+) called .* but rank ([0-9]+) called";
  for (int r = 0; r < c.size; ++r) {
    SCOPED_TRACE(what + ", rank " + std::to_string(r));
    EXPECT_NE(outcomes[r].find("TSR_ERR_MISMATCH"), std::string::npos) << outcomes[r];
    std::smatch m;
    if (!std::regex_search(outcomes[r], m, std::regex(differs))) {
      ADD_FAILURE() << "no \"" << field << " differs: rank A called ... but rank B called\" in: " << outcomes[r];
    } else {
      const int a = std::stoi(m[1]), b = std::stoi(m[2]);
      EXPECT_NE(isOdd(a), isOdd(b)) << "the two ranks named called alike: " << outcomes[r];
    }
    EXPECT_EQ(after[r].find("TSR_OK"), std::string::npos) << "the next call succeeded: " << after[r];
  }
}

// Every collective x field x count, each against the odd-rank cases: in turn here (every case
// still meets every collective), all of them in the full tier (FullMismatchMatrix).
void expectEveryRankToldOnRoute(Route route, bool everyCase) {
  const std::vector<Case> cases{{route, 3, {0}}, {route, 3, {2}}, {route, 5, {1, 2, 3, 4}}};
  size_t turn = 0;
  for (Kind kind : {Kind::kAllreduce, Kind::kAllgather, Kind::kReduceScatter, Kind::kBroadcast, Kind::kBarrier})
    for (const std::string& field : fieldsOf(kind))
      for (size_t count : countsFor(route))
        for (size_t i = 0; i < cases.size(); ++i, ++turn) {
          if (!everyCase && i != turn / cases.size() % cases.size()) continue;
          // A barrier's odd ranks call an allreduce of `count` instead.
          expectEveryRankTold(cases[i], kind, field, count);
        }
}

std::string routeParamName(const ::testing::TestParamInfo<Route>& info) { return routeName(info.param); }

class MismatchMatrix : public ::testing::TestWithParam<Route> {};
TEST_P(MismatchMatrix, EveryRankIsToldForEveryCollectiveAndField) { expectEveryRankToldOnRoute(GetParam(), false); }
INSTANTIATE_TEST_SUITE_P(Routes, MismatchMatrix, ::testing::Values(Route::kMessages, Route::kBoard, Route::kStages),
                         routeParamName);

class FullMismatchMatrix : public ::testing::TestWithParam<Route> {};
TEST_P(FullMismatchMatrix, EveryRankIsToldForEveryCollectiveFieldAndCase) {
  expectEveryRankToldOnRoute(GetParam(), true);
}
INSTANTIATE_TEST_SUITE_P(Routes, FullMismatchMatrix, ::testing::Values(Route::kMessages, Route::kBoard, Route::kStages),
                         routeParamName);

// An empty call meets its peers: a rank that calls with 0 elements where the others call with
// 8 is a count mismatch on every rank, at once (it returned "ok" with nothing done, and its
// peers waited out the timeout over messages); every rank calling with 0 is fine.
class EmptyCalls : public ::testing::TestWithParam<Route> {};
TEST_P(EmptyCalls, OneEmptyRankIsAMismatchEverywhereAndAllEmptyIsFine) {
  const Route route = GetParam();
  for (Kind kind : {Kind::kAllreduce, Kind::kAllgather, Kind::kReduceScatter, Kind::kBroadcast}) {
    std::vector<std::string> mixed(3), allEmpty(3);
    testing::runRanksEach(
        3,
        [&](Communicator& comm) {
          const int r = comm.rank();
          allEmpty[r] = post(comm, {kind, 0}).toString();
          mixed[r] = post(comm, {kind, r == 2 ? size_t{0} : size_t{8}}).toString();
        },
        [&](int rank) {
          testing::Settings s{{"TSR_TIMEOUT_MS", "20000"}, {"TSR_LOG_LEVEL", "off"}};
          if (route == Route::kMessages) s["TSR_TEST_HOST_ID"] = "h" + std::to_string(rank);
          return s;
        });
    for (int r = 0; r < 3; ++r) {
      SCOPED_TRACE(std::string(kindName(kind)) + " via " + routeName(route) + ", rank " + std::to_string(r));
      EXPECT_EQ(allEmpty[r], "TSR_OK");
      EXPECT_NE(mixed[r].find("TSR_ERR_MISMATCH: count differs"), std::string::npos) << mixed[r];
      EXPECT_NE(mixed[r].find("(count=0"), std::string::npos) << mixed[r];
    }
  }
}
INSTANTIATE_TEST_SUITE_P(Routes, EmptyCalls, ::testing::Values(Route::kMessages, Route::kBoard), routeParamName);

// A task that finishes at once, or (gated) only once `open` is set: a rank that is slow to
// finish a collective its peers have finished.
class GatedTask final : public algorithms::Task {
 public:
  explicit GatedTask(const std::atomic<bool>* open) : open_(open) {}
  Status start() override { return progress(); }
  Status progress() override { return !open_ || open_->load() ? Status::ok() : Status(Code::kInProgress, ""); }
  void abort(const Status&) override {}
  bool quiescent() const override { return true; }
  int waitingOn() const override { return -1; }
  std::string describe() const override { return "gated task"; }

 private:
  const std::atomic<bool>* open_;
};

class EarlierCollectives : public ::testing::TestWithParam<Route> {};

// Every rank runs collective #0 alike, then a mismatched #1. Rank 3 is still in #0 when the
// others (and it) see the mismatch in #1: its #0 must still complete, with TSR_OK, as it does
// on its peers; #1 fails with the mismatch on every rank, and what follows is aborted.
TEST_P(EarlierCollectives, CompleteWhenALaterOneIsMismatched) {
  const Route route = GetParam();
  const size_t count = route == Route::kStages ? 100000 : 8;
  std::atomic<bool> open{false};
  std::vector<std::string> first(4), second(4), third(4);
  testing::runRanksEach(
      4,
      [&](Communicator& comm) {
        const int r = comm.rank();
        const std::atomic<bool>* gate = r == 3 ? &open : nullptr;
        auto req0 =
            comm.submitTask([gate](const algorithms::TaskContext&) -> Result<std::unique_ptr<algorithms::Task>> {
              return std::unique_ptr<algorithms::Task>(new GatedTask(gate));
            });
        ASSERT_TRUE(req0.isOk()) << req0.status().toString();
        second[r] = post(comm, {Kind::kAllreduce, r == 1 ? count + 1 : count}).toString();
        if (r == 3) {
          EXPECT_FALSE(req0.value()->done())
              << "rank 3's #0 ended before it was let through: " << req0.value()->test().toString();
          open = true;
        }
        first[r] = req0.value()->wait().toString();
        third[r] = post(comm, {Kind::kBarrier, 0}).toString();
      },
      [&](int rank) {
        testing::Settings s{{"TSR_TIMEOUT_MS", "20000"}, {"TSR_LOG_LEVEL", "off"}};
        if (route == Route::kMessages) s["TSR_TEST_HOST_ID"] = "h" + std::to_string(rank);
        return s;
      });
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE(std::string(routeName(route)) + ", rank " + std::to_string(r));
    EXPECT_EQ(first[r], "TSR_OK") << "the collective every rank called alike failed";
    EXPECT_NE(second[r].find("TSR_ERR_MISMATCH"), std::string::npos) << second[r];
    EXPECT_NE(second[r].find("count differs"), std::string::npos) << second[r];
    EXPECT_NE(third[r].find("TSR_ERR_ABORTED"), std::string::npos) << third[r];
  }
}

INSTANTIATE_TEST_SUITE_P(Routes, EarlierCollectives, ::testing::Values(Route::kMessages, Route::kBoard, Route::kStages),
                         [](const ::testing::TestParamInfo<Route>& info) {
                           return std::string(routeName(info.param));
                         });

// After an error each rank lingers, reading, until every peer it still counts has said
// goodbye (at most 1 s: progress_engine.cc's kLinger). A peer that saw this rank's goodbye
// before saying its own must still say it, or this rank waits out the whole linger: on one
// host (shared memory: UCX sees no peer go) that was half of all destroys after a mismatch.
TEST(DestroyAfterAMismatch, EveryRankLeavesOnceAllHaveSaidGoodbye) {
  using Clock = std::chrono::steady_clock;
  for (int rep = 0; rep < 6; ++rep) {
    std::vector<Clock::time_point> bodyEnd(3);
    testing::runRanksEach(
        3,
        [&](Communicator& comm) {
          const int r = comm.rank();
          EXPECT_NE(post(comm, {Kind::kAllreduce, r == 0 ? size_t{100001} : size_t{100000}})
                        .toString()
                        .find("TSR_ERR_MISMATCH"),
                    std::string::npos);
          bodyEnd[r] = Clock::now();
        },
        [](int) {
          return testing::Settings{{"TSR_TIMEOUT_MS", "20000"}, {"TSR_LOG_LEVEL", "off"}};
        });
    const auto teardown = Clock::now() - *std::max_element(bodyEnd.begin(), bodyEnd.end());
    EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(teardown).count(), 800)
        << "repetition " << rep << ": a rank waited out the linger for a goodbye";
  }
}

}  // namespace
}  // namespace tsr
