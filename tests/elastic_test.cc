// A rank dies and the job goes on: ranks as processes under the real tsrun --elastic, running
// fault_worker shrink (tests/proc/shrink_check.cc): the victims SIGKILL themselves in the middle
// of a long allreduce, the survivors shrink the communicator and check the new one (ranked in
// their old order, allreduce exact, allgather in order); tsrun names the lost ranks and ends
// non-zero. When the survivors are not a majority, each says so and stops.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "base/self_path.h"
#include "tests/support/job_report.h"
#include "tools/tsrun/tests/child_process.h"

namespace tsr {
namespace {

using testing::describe;
using testing::outcomeOf;
using tools::tsrun::testing::ChildProcess;
using tools::tsrun::testing::RunResult;

RunResult runElastic(int n, const std::vector<std::string>& workerArgs, const std::vector<std::string>& env,
                     const std::string& mode = "--elastic") {
  std::vector<std::string> argv{besideSelf("tsrun"), mode, "-np", std::to_string(n)};
  for (const auto& e : env) {
    argv.push_back("-x");
    argv.push_back(e);
  }
  argv.push_back(besideSelf("fault_worker"));
  argv.insert(argv.end(), workerArgs.begin(), workerArgs.end());
  ChildProcess job(argv);
  return job.finish(120);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// How long a member's failed grow took, from its "(1 failed grow: N ms: ..." line; -1 if none.
int failedGrowMs(const std::string& line) {
  const std::string mark = "(1 failed grow: ";
  const size_t at = line.find(mark);
  return at == std::string::npos ? -1 : std::atoi(line.c_str() + at + mark.size());
}

// The survivors (old ranks, in order) each report their new rank of as many, and `moved` (what
// they carried over to the new communicator and checked there).
void expectSurvivorsMoved(const RunResult& r, const std::vector<int>& survivors, const std::string& moved) {
  const std::string of = " of " + std::to_string(survivors.size());
  for (size_t next = 0; next < survivors.size(); ++next) {
    const std::string line = outcomeOf(r, survivors[next]);
    EXPECT_TRUE(has(line, "SHRUNK to rank " + std::to_string(next) + of)) << line << "\n" << describe(r);
    EXPECT_TRUE(has(line, moved)) << line;
  }
}

// One rank SIGKILLed during a dense ring allreduce (16 MiB, 4 ranks): the three others shrink
// to a communicator of 3 whose next collectives are exact.
TEST(Elastic, SurvivorsOfAKilledRankShrinkAndGoOn) {
  RunResult r = runElastic(4, {"shrink", "2"}, {"TSR_TIMEOUT_MS=10000"});
  ASSERT_FALSE(r.timedOut) << describe(r);
  int next = 0;
  for (int rank : {0, 1, 3}) {
    const std::string line = outcomeOf(r, rank);
    EXPECT_TRUE(has(line, "SHRUNK to rank " + std::to_string(next++) + " of 3")) << line << "\n" << describe(r);
    EXPECT_TRUE(has(line, "allreduce exact")) << line;
  }
  EXPECT_NE(r.exitCode(), 0) << describe(r);
  EXPECT_TRUE(has(r.err, "--elastic: 1 of 4 ranks lost")) << r.err;
}

// The same in the middle of a Marsit and of a SparDL allreduce (tensors of the algorithms'
// own plans): the survivors shrink, the dense collectives after are exact, the tensor moved
// to their communicator with its residual steps alike on each.
TEST(Elastic, SurvivorsOfAKilledRankInAMarsitAllreduceGoOn) {
  RunResult r = runElastic(4, {"shrink", "1", "1048576"}, {"TSR_TIMEOUT_MS=10000", "FAULT_TENSOR=marsit"});
  ASSERT_FALSE(r.timedOut) << describe(r);
  expectSurvivorsMoved(r, {0, 2, 3}, "tensor moved, its step agreed");
}

TEST(Elastic, SurvivorsOfAKilledRankInASparDLAllreduceGoOn) {
  RunResult r = runElastic(5, {"shrink", "4", "1048576"}, {"TSR_TIMEOUT_MS=10000", "FAULT_TENSOR=spardl"});
  ASSERT_FALSE(r.timedOut) << describe(r);
  expectSurvivorsMoved(r, {0, 1, 2, 3}, "tensor moved, its step agreed");
}

// A compressed top-k tensor with error feedback: whether the victim dies before or after the
// survivors compressed (the residual moves on only when the step ends), the failed step leaves
// the residual as it was, so the redo counts the gradient once, and the moved tensor steps
// alike. CompressedDirect.AStepFailingInItsExchange* break the exchange itself every time.
TEST(Elastic, SurvivorsOfAKilledRankInACompressedTopkStepKeepItsResidual) {
  RunResult r = runElastic(4, {"shrink", "3", "1048576"}, {"TSR_TIMEOUT_MS=10000", "FAULT_TENSOR=topk"});
  ASSERT_FALSE(r.timedOut) << describe(r);
  expectSurvivorsMoved(r, {0, 1, 2}, "tensor moved, its step agreed");
}

// A rank SIGKILLed between handing over its two COVAP buckets, and one before its SelSync
// step: the survivors' step fails and leaves their state as it was (residuals and step count;
// the local model and counts), the handle moves to the survivors' communicator with it, and
// the step redone there agrees on every survivor.
TEST(Elastic, SurvivorsOfAKilledRankInACovapStepMoveItsResidualsAndGoOn) {
  RunResult r = runElastic(4, {"shrink", "2", "1048576"}, {"TSR_TIMEOUT_MS=10000", "FAULT_TENSOR=covap"});
  ASSERT_FALSE(r.timedOut) << describe(r);
  expectSurvivorsMoved(r, {0, 1, 3}, "covap moved, its step agreed");
}

TEST(Elastic, SurvivorsOfAKilledRankInASelSyncStepMoveItAndGoOn) {
  RunResult r = runElastic(3, {"shrink", "0", "65536"}, {"TSR_TIMEOUT_MS=10000", "FAULT_TENSOR=selsync"});
  ASSERT_FALSE(r.timedOut) << describe(r);
  expectSurvivorsMoved(r, {1, 2}, "selsync moved, its step agreed");
}

// Two ranks at once, of 5 (the rest still a majority), over TCP between the processes.
TEST(Elastic, TwoRanksKilledAtOnceLeaveAMajorityThatGoesOn) {
  RunResult r = runElastic(5, {"shrink", "1,3"}, {"TSR_TIMEOUT_MS=10000", "UCX_TLS=tcp,self"});
  ASSERT_FALSE(r.timedOut) << describe(r);
  int next = 0;
  for (int rank : {0, 2, 4})
    EXPECT_TRUE(has(outcomeOf(r, rank), "SHRUNK to rank " + std::to_string(next++) + " of 3")) << describe(r);
}

// A rank stopped past the timeout is lost (its neighbours miss its heartbeats; at the latest the
// agreement's deadline); woken after the others have shrunk, its own shrink is refused: it is
// never admitted with its stale state.
TEST(Elastic, ARankStoppedPastTheTimeoutIsShutOutAndRefusedWhenWoken) {
  RunResult r = runElastic(4, {"shrink-stop", "1"}, {"TSR_TIMEOUT_MS=3000"});
  ASSERT_FALSE(r.timedOut) << describe(r);
  int next = 0;
  for (int rank : {0, 2, 3})
    EXPECT_TRUE(has(outcomeOf(r, rank), "SHRUNK to rank " + std::to_string(next++) + " of 3")) << describe(r);
  const std::string woken = outcomeOf(r, 1);
  EXPECT_TRUE(has(woken, "FAILED to shrink")) << woken << "\n" << describe(r);
}

// A rank that comes to the shrink a second late, within the timeout, is not shrunk out: with
// no failure at all, every rank stays (as ULFM's shrink of a healthy communicator).
TEST(Elastic, ASlowRankWithinTheTimeoutIsNotShrunkOut) {
  RunResult r = runElastic(4, {"shrink-slow", "2"}, {"TSR_TIMEOUT_MS=3000"});
  ASSERT_FALSE(r.timedOut) << describe(r);
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_TRUE(has(outcomeOf(r, rank), "SHRUNK to rank " + std::to_string(rank) + " of 4")) << describe(r);
  EXPECT_EQ(r.exitCode(), 0) << describe(r);
}

// A rank killed mid-allreduce, then another while the survivors agree: one shrink still gives
// the three left a communicator without either (agreed again when the bootstrap could not
// close), within the bootstrap's bound (the 3 s timeout, at least 5 s) of the second death.
TEST(Elastic, ARankDyingDuringTheShrinkIsLeftOutToo) {
  RunResult r = runElastic(5, {"shrink-die", "1,3"}, {"TSR_TIMEOUT_MS=3000"});
  ASSERT_FALSE(r.timedOut) << describe(r);
  int next = 0;
  for (int rank : {0, 2, 4})
    EXPECT_TRUE(has(outcomeOf(r, rank), "SHRUNK to rank " + std::to_string(next++) + " of 3")) << describe(r);
  EXPECT_LT(r.seconds, 30) << describe(r);
}

// Two of four lost: the two left are not a majority (they could be one side of a partition),
// so each stops with an error that says so, instead of going on as a job of two. (The one that
// stops second may have seen the first leave: it then counts itself alone, "1 of 4".)
TEST(Elastic, HalfTheRanksLeftIsNotAMajorityAndStops) {
  RunResult r = runElastic(4, {"shrink", "0,3"}, {"TSR_TIMEOUT_MS=10000"});
  ASSERT_FALSE(r.timedOut) << describe(r);
  for (int rank : {1, 2}) {
    const std::string line = outcomeOf(r, rank);
    EXPECT_TRUE(has(line, "FAILED to shrink")) << line << "\n" << describe(r);
    EXPECT_TRUE(has(line, "of 4, not a majority")) << line;
    EXPECT_FALSE(has(line, "SHRUNK")) << line;
  }
}

// Under tsrun --respawn 1, rank 2 SIGKILLed mid-allreduce is started again with TSR_JOIN=1:
// the three survivors shrink, then grow (between their "steps") until the replacement asked
// at a survivor's door is let in. The grown communicator ranks the survivors first, in order,
// the replacement last; its collectives are exact; a further grow finds nobody. The job ends
// well: the lost rank was replaced.
TEST(Elastic, AReplacementJoinsTheSurvivorsAndTheJobIsWholeAgain) {
  RunResult r = runElastic(4, {"grow", "2"}, {"TSR_TIMEOUT_MS=10000"}, "--respawn=1");
  ASSERT_FALSE(r.timedOut) << describe(r);
  int next = 0;
  for (int rank : {0, 1, 3})
    EXPECT_TRUE(has(outcomeOf(r, rank), "GREW to rank " + std::to_string(next++) + " of 4")) << describe(r);
  EXPECT_TRUE(has(outcomeOf(r, 2), "JOINED as rank 3 of 4")) << describe(r);
  EXPECT_TRUE(has(r.err, "--respawn: starting rank 2 again")) << r.err;
  EXPECT_EQ(r.exitCode(), 0) << describe(r);
}

// The same under --respawn 2, but the first replacement vanishes once welcomed, before the
// grown communicator's bootstrap: the survivors' grow that let it in fails within the timeout
// (at least 5 s), their communicator stays usable (an exact allreduce after it), and a later
// grow lets in the second replacement tsrun starts.
TEST(Elastic, AReplacementVanishingAfterItsWelcomeFailsOneGrowAndTheNextOneComesIn) {
  RunResult r = runElastic(4, {"grow-vanish", "2"}, {"TSR_TIMEOUT_MS=5000"}, "--respawn=2");
  ASSERT_FALSE(r.timedOut) << describe(r);
  EXPECT_TRUE(has(r.out, "rank 2: VANISHED after the welcome")) << describe(r);
  int next = 0;
  for (int rank : {0, 1, 3}) {
    const std::string line = outcomeOf(r, rank);
    EXPECT_TRUE(has(line, "GREW to rank " + std::to_string(next++) + " of 4")) << line << "\n" << describe(r);
    EXPECT_TRUE(has(line, "TSR_ERR_BOOTSTRAP: grow: rank " + std::to_string(next - 1) + " could not bootstrap"))
        << line;
    EXPECT_GE(failedGrowMs(line), 0) << line;
    EXPECT_LE(failedGrowMs(line), 5000 + 3000) << "not within the 5 s timeout: " << line;
  }
  EXPECT_TRUE(has(r.out, "[2] rank 2: JOINED as rank 3 of 4")) << describe(r);
  EXPECT_EQ(r.exitCode(), 0) << describe(r);
}

// Under --respawn 1, rank 2 SIGKILLed and its replacement waiting at a door: rank 3 dies
// instead of calling the grow the others wait in. Their grow fails naming it; they shrink
// again (2 of 3) and grow on, and the replacement comes in: a grown communicator of 3, the
// two members first, then the replacement.
TEST(Elastic, AMemberDyingInAGrowFailsItAndTheOthersShrinkAndGrowOn) {
  RunResult r = runElastic(4, {"grow-member-dies", "2"}, {"TSR_TIMEOUT_MS=5000"}, "--respawn=1");
  ASSERT_FALSE(r.timedOut) << describe(r);
  EXPECT_TRUE(has(r.out, "[3] rank 3: raising SIGKILL instead of growing")) << describe(r);
  for (int rank : {0, 1}) {
    const std::string line = outcomeOf(r, rank);
    EXPECT_TRUE(has(line, "GREW to rank " + std::to_string(rank) + " of 3")) << line << "\n" << describe(r);
    EXPECT_TRUE(has(line, "TSR_ERR_PEER_FAILED: grow: rank " + std::to_string(rank) + ": rank 2 ")) << line;
    EXPECT_GE(failedGrowMs(line), 0) << line;
    EXPECT_LE(failedGrowMs(line), 5000 + 3000) << "not within the 5 s timeout: " << line;
  }
  EXPECT_TRUE(has(r.out, "[2] rank 2: JOINED as rank 2 of 3")) << describe(r);
  EXPECT_TRUE(has(r.err, "ranks lost: 3 (host")) << r.err;
}

}  // namespace
}  // namespace tsr
