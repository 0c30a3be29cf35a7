// COVAP handles moving to another communicator over real UCX (ranks as threads; split makes
// the shrunk and grown teams): the residuals, step and interval carry on, a replacement's fresh
// handle takes the others' step and interval, nothing is lost across the move, and what cannot
// move is refused by name. (Moving after a real failure: Elastic.*Covap* in tests/.)
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "algorithms/covap/covap.h"
#include "tests/support/thread_world.h"

namespace tsr::covap {
namespace {

const std::vector<size_t> kCounts{3000, 1000, 2000};

float gradValue(int rank, int step, size_t j) { return static_cast<float>((rank + 1) * (step + 1) + j % 5); }

// One step with every bucket handed over, last first; adds what the step applied and the
// gradients given to the running sums (flat over the buckets). Skipped shards must come back 0.
void step(Covap& cv, int rank, std::vector<double>& applied, std::vector<double>& given) {
  const int s = static_cast<int>(cv.step());
  const int interval = cv.interval();  // this step's: a profile ending in it changes them
  const std::vector<Shard> shards = cv.shards();
  std::vector<std::vector<float>> g;
  for (size_t k : kCounts) g.emplace_back(k);
  cv.beginStep();
  for (size_t b = kCounts.size(); b-- > 0;) {
    for (size_t j = 0; j < kCounts[b]; ++j) g[b][j] = gradValue(rank, s, j);
    ASSERT_TRUE(cv.bucketReady(b, g[b].data()).isOk());
  }
  ASSERT_TRUE(cv.finishStep().isOk());
  for (size_t t = 0; t < shards.size(); ++t) {
    const Shard& sh = shards[t];
    if (selected(t, s, interval)) continue;
    for (size_t j = sh.offset; j < sh.offset + sh.count; ++j)
      ASSERT_EQ(g[sh.bucket][j], 0.0f) << "skipped shard " << t << " at step " << s;
  }
  size_t at = 0;
  for (size_t b = 0; b < kCounts.size(); ++b)
    for (size_t j = 0; j < kCounts[b]; ++j, ++at) {
      applied[at] += g[b][j];
      given[at] += gradValue(rank, s, j);
    }
}

std::vector<double> residuals(const Covap& cv) {
  std::vector<double> out;
  for (size_t b = 0; b < cv.bucketCount(); ++b)
    for (float r : cv.residual(b)) out.push_back(r);
  return out;
}

// 4 ranks step 3 times; rank 3 leaves (as a failed rank would) and the three others move to
// their own communicator and step 3 times more. Nothing is lost: every gradient given is in
// what the two teams applied (4 and 3 times each average) or in a residual, rank 3's included.
TEST(CovapMove, CarriesOnOverASmallerTeamWithItsResidualsAndStep) {
  const size_t total = 6000;
  std::mutex mutex;
  std::vector<double> appliedBefore(total), appliedAfter(total), given(total, 0), held(total, 0);
  testing::runRanks(4, [&](runtime::Communicator& comm) {
    const int me = comm.rank();
    auto made = Covap::create(comm, {{"interval", "2"}, {"ef_init", "0.5"}, {"ef_ascend_range", "0"}}, kCounts);
    ASSERT_TRUE(made.isOk()) << made.status().toString();
    Covap& cv = *made.value();
    std::vector<double> before(total, 0), after(total, 0), mine(total, 0);
    for (int i = 0; i < 3; ++i) step(cv, me, before, mine);
    auto part = comm.split(me < 3 ? 0 : 1, me);
    ASSERT_TRUE(part.isOk()) << part.status().toString();
    if (me < 3) {
      const std::vector<double> kept = residuals(cv);
      ASSERT_TRUE(cv.moveTo(*part.value()).isOk());
      EXPECT_EQ(cv.step(), 3u);
      EXPECT_EQ(cv.interval(), 2);
      EXPECT_EQ(residuals(cv), kept) << "the move changed a residual";
      for (int i = 0; i < 3; ++i) step(cv, me, after, mine);
      EXPECT_EQ(cv.step(), 6u);
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (me == 0) appliedBefore = before, appliedAfter = after;
    const std::vector<double> res = residuals(cv);
    for (size_t i = 0; i < total; ++i) given[i] += mine[i], held[i] += res[i];
  });
  for (size_t i = 0; i < total; ++i)
    ASSERT_NEAR(4 * appliedBefore[i] + 3 * appliedAfter[i] + held[i], given[i], 1e-3 * std::max(1.0, given[i]))
        << "element " << i;
}

// Ranks 0-2 train on their own communicator (the interval measured there); rank 3, a
// replacement, makes a fresh handle on the whole team and all four move to it: it takes the
// step, interval and CCR of the others, and the next steps agree on every rank.
TEST(CovapMove, AReplacementTakesTheStepAndIntervalOfTheOthers) {
  std::mutex mutex;
  std::vector<std::vector<double>> results(4);
  std::vector<uint64_t> steps(4);
  std::vector<int> intervals(4);
  std::vector<double> ccrs(4);
  const std::map<std::string, std::string> params{{"interval", "auto"}, {"profile_steps", "2"}, {"max_interval", "3"}};
  testing::runRanks(4, [&](runtime::Communicator& comm) {
    const int me = comm.rank();
    auto part = comm.split(me < 3 ? 0 : 1, me);
    ASSERT_TRUE(part.isOk()) << part.status().toString();
    std::vector<double> applied(6000, 0), given(6000, 0);
    auto made = Covap::create(me < 3 ? static_cast<algorithms::Team&>(*part.value()) : comm, params, kCounts);
    ASSERT_TRUE(made.isOk()) << made.status().toString();
    Covap& cv = *made.value();
    if (me < 3)
      for (int i = 0; i < 4; ++i) step(cv, me, applied, given);
    ASSERT_TRUE(cv.moveTo(comm).isOk());
    std::fill(applied.begin(), applied.end(), 0.0);
    for (int i = 0; i < 2; ++i) step(cv, me, applied, given);
    std::lock_guard<std::mutex> lock(mutex);
    results[me] = applied;
    steps[me] = cv.step();
    intervals[me] = cv.interval();
    ccrs[me] = cv.measuredCcr();
  });
  for (int r = 1; r < 4; ++r) {
    EXPECT_EQ(steps[r], 6u) << "rank " << r;
    EXPECT_EQ(intervals[r], intervals[0]) << "rank " << r;
    EXPECT_EQ(ccrs[r], ccrs[0]) << "rank " << r;
    EXPECT_EQ(results[r], results[0]) << "rank " << r << "'s applied gradients differ from rank 0's";
  }
  EXPECT_GT(ccrs[0], 0.0) << "the profile on ranks 0-2 measured nothing";
}

// Refused, naming what: a step still open; handles made with other buckets; ranks that
// stepped to different steps (an odd step of one small bucket at interval 2 sends nothing, so
// rank 0 can take it alone).
TEST(CovapMove, RefusesAnOpenStepOtherBucketsAndRanksAtDifferentSteps) {
  testing::runRanks(2, [&](runtime::Communicator& comm) {
    const int me = comm.rank();
    auto made = Covap::create(comm, {{"interval", "2"}}, {100});
    ASSERT_TRUE(made.isOk());
    Covap& cv = *made.value();
    std::vector<float> g(100, 1.0f);
    cv.beginStep();
    ASSERT_TRUE(cv.bucketReady(0, g.data()).isOk());
    Status open = cv.moveTo(comm);
    EXPECT_NE(open.message().find("open"), std::string::npos) << open.toString();
    EXPECT_NE(cv.bucketReady(0, g.data()).message().find("handed over twice"), std::string::npos);
    ASSERT_TRUE(cv.finishStep().isOk());

    auto other = Covap::create(comm, {{"interval", "2"}}, {me == 0 ? size_t{100} : size_t{101}});
    ASSERT_TRUE(other.isOk());
    Status shape = other.value()->moveTo(comm);
    EXPECT_NE(shape.message().find("differ in their parameters or bucket counts"), std::string::npos)
        << shape.toString();

    if (me == 0) {  // step 1 selects nothing of one shard at interval 2: no communication
      cv.beginStep();
      ASSERT_TRUE(cv.bucketReady(0, g.data()).isOk());
      ASSERT_TRUE(cv.finishStep().isOk());
    }
    Status apart = cv.moveTo(comm);
    EXPECT_NE(apart.message().find("at steps 1 to 2"), std::string::npos) << apart.toString();
  });
}

}  // namespace
}  // namespace tsr::covap
