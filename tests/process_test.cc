// Ranks as separate processes, launched by the real tsrun: every collective for N = 1..8, and
// the failure cases (a rank SIGKILLed or SIGSTOPped mid-allreduce, mismatched arguments), whose
// reports are read from tsrun's prefixed output.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tools/tsrun/tests/child_process.h"

namespace tsr {
namespace {

using tools::tsrun::testing::ChildProcess;
using tools::tsrun::testing::RunResult;

RunResult runJob(int n, const std::vector<std::string>& workerArgs,
                 const std::vector<std::string>& env, double limitSeconds) {
  std::vector<std::string> argv{TSRUN_PATH, "-np", std::to_string(n), "--grace", "9"};
  for (const auto& e : env) {
    argv.push_back("-x");
    argv.push_back(e);
  }
  argv.push_back(FAULT_WORKER_PATH);
  argv.insert(argv.end(), workerArgs.begin(), workerArgs.end());
  ChildProcess job(argv);
  return job.finish(limitSeconds);
}

std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.exitCode()) + " after " + std::to_string(r.seconds) +
         " s\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

// The line rank r printed about its outcome ("[r] rank r: ..."), or "".
std::string outcomeOf(const RunResult& r, int rank) {
  std::string prefix = "[" + std::to_string(rank) + "] rank " + std::to_string(rank) + ": ";
  for (const auto& line : r.outLines())
    if (line.rfind(prefix, 0) == 0 && line.find("raising") == std::string::npos) return line;
  return "";
}

long failedAfterMs(const std::string& line) {
  std::smatch m;
  if (!std::regex_search(line, m, std::regex("FAILED after ([0-9]+) ms"))) return -1;
  return std::stol(m[1]);
}

class ProcessCollectives : public ::testing::TestWithParam<int> {};

TEST_P(ProcessCollectives, EveryCollectiveTypeAndOpIsExact) {
  int n = GetParam();
  RunResult r = runJob(n, {"full"}, {}, 240);
  ASSERT_FALSE(r.timedOut) << describe(r);
  EXPECT_EQ(r.exitCode(), 0) << describe(r);
  for (int rank = 0; rank < n; ++rank)
    EXPECT_NE(outcomeOf(r, rank).find(": OK "), std::string::npos) << "rank " << rank << "\n" << describe(r);
}

INSTANTIATE_TEST_SUITE_P(Ranks, ProcessCollectives, ::testing::Values(1, 2, 3, 4, 5, 7, 8),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

TEST(ProcessFaults, KilledRankIsNamedByEveryOtherRankWithinTheTimeout) {
  RunResult r = runJob(4, {"kill", "2"}, {"TSR_TIMEOUT_MS=5000"}, 90);
  ASSERT_FALSE(r.timedOut) << describe(r);
  EXPECT_NE(r.exitCode(), 0) << describe(r);
  for (int rank : {0, 1, 3}) {
    std::string line = outcomeOf(r, rank);
    long ms = failedAfterMs(line);
    EXPECT_GE(ms, 0) << "rank " << rank << " did not report a failure\n" << describe(r);
    EXPECT_LE(ms, 5000 + 2000) << line;
    EXPECT_NE(line.find("rank 2"), std::string::npos) << "the dead rank is not named: " << line;
  }
  // tsrun names the rank that failed first.
  EXPECT_NE(r.err.find("rank 2"), std::string::npos) << describe(r);
}

TEST(ProcessFaults, StoppedRankMakesTheOthersTimeOut) {
  RunResult r = runJob(4, {"stop", "1"}, {"TSR_TIMEOUT_MS=4000"}, 90);
  ASSERT_FALSE(r.timedOut) << describe(r);
  EXPECT_NE(r.exitCode(), 0) << describe(r);
  for (int rank : {0, 2, 3}) {
    std::string line = outcomeOf(r, rank);
    long ms = failedAfterMs(line);
    EXPECT_GE(ms, 0) << "rank " << rank << " did not report a failure\n" << describe(r);
    EXPECT_LE(ms, 4000 + 3000) << line;
    EXPECT_NE(line.find("TSR_ERR_TIMEOUT"), std::string::npos) << line;
    EXPECT_NE(line.find("stopped responding"), std::string::npos) << line;
  }
  // Its neighbours miss its heartbeats and name it, before anyone blames the rank it
  // happens to wait on.
  for (int rank : {0, 2, 3})
    EXPECT_NE(outcomeOf(r, rank).find("rank 1 (") , std::string::npos) << outcomeOf(r, rank);
}

class ProcessMismatch : public ::testing::TestWithParam<std::string> {};

TEST_P(ProcessMismatch, EveryRankGetsMismatchNamingTheField) {
  std::string field = GetParam();
  RunResult r = runJob(4, {"mismatch", field}, {"TSR_TIMEOUT_MS=20000"}, 60);
  ASSERT_FALSE(r.timedOut) << describe(r);
  EXPECT_NE(r.exitCode(), 0) << describe(r);
  for (int rank = 0; rank < 4; ++rank) {
    std::string line = outcomeOf(r, rank);
    EXPECT_NE(line.find("TSR_ERR_MISMATCH"), std::string::npos) << "rank " << rank << ": " << line << "\n" << describe(r);
    EXPECT_NE(line.find(field), std::string::npos) << line;
    EXPECT_LT(failedAfterMs(line), 10000) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Fields, ProcessMismatch, ::testing::Values("count", "dtype", "op"));

}  // namespace
}  // namespace tsr
