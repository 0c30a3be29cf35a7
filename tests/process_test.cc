// Ranks as separate processes, launched by the real tsrun: every collective for N = 1..8, and
// the failure cases (a rank SIGKILLed or SIGSTOPped mid-allreduce, mismatched arguments), whose
// reports are read from tsrun's prefixed output.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
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

// grace: tsrun's --grace, how long the ranks still running have to report once one has
// failed (fault_worker ignores SIGTERM) before tsrun kills them.
RunResult runJob(int n, const std::vector<std::string>& workerArgs, const std::vector<std::string>& env,
                 double limitSeconds, int grace = 9) {
  std::vector<std::string> argv{besideSelf("tsrun"), "-np", std::to_string(n), "--grace", std::to_string(grace)};
  for (const auto& e : env) {
    argv.push_back("-x");
    argv.push_back(e);
  }
  argv.push_back(besideSelf("fault_worker"));
  argv.insert(argv.end(), workerArgs.begin(), workerArgs.end());
  ChildProcess job(argv);
  return job.finish(limitSeconds);
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

// The edges here, the rest in the full tier.
INSTANTIATE_TEST_SUITE_P(Ranks, ProcessCollectives, ::testing::Values(1, 2, 3, 8),
                         [](const auto& info) { return "N" + std::to_string(info.param); });
INSTANTIATE_TEST_SUITE_P(FullRanks, ProcessCollectives, ::testing::Values(4, 5, 7),
                         [](const auto& info) { return "N" + std::to_string(info.param); });

// UCX's own variables reach every rank through tsrun -x: with UCX_TLS=tcp,self even same-host
// peers talk over TCP loopback (UCX's info log shows each rank's endpoint transports: tcp, and
// none of the shared-memory ones it picks by default), and every collective is still exact.
TEST(ProcessCollectivesOverTcp, EveryCollectiveIsExactWithUcxTlsTcpSelf) {
  RunResult r = runJob(3, {"full"}, {"UCX_TLS=tcp,self", "UCX_LOG_LEVEL=info"}, 240);
  ASSERT_FALSE(r.timedOut) << describe(r);
  EXPECT_EQ(r.exitCode(), 0) << describe(r);
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_NE(outcomeOf(r, rank).find(": OK "), std::string::npos) << "rank " << rank << "\n" << describe(r);
  std::vector<int> tcpEndpoints(3, 0);
  for (const auto& line : r.outLines()) {
    if (line.find("ep_cfg[") == std::string::npos) continue;
    for (const char* shm : {"sysv/", "posix/", "cma/", "xpmem/", "knem/"})
      EXPECT_EQ(line.find(shm), std::string::npos) << "shared memory despite UCX_TLS=tcp,self: " << line;
    for (int rank = 0; rank < 3; ++rank)
      if (line.rfind("[" + std::to_string(rank) + "] ", 0) == 0 && line.find("tcp/") != std::string::npos)
        ++tcpEndpoints[rank];
  }
  for (int rank = 0; rank < 3; ++rank)
    EXPECT_GT(tcpEndpoints[rank], 0) << "rank " << rank << " logged no tcp endpoint\n" << describe(r);
}

// Every rank in `ranks` reported a failure within limitMs of the fault, naming each of `names`.
void expectFailedNaming(const RunResult& r, const std::vector<int>& ranks, long limitMs,
                        const std::vector<std::string>& names) {
  ASSERT_FALSE(r.timedOut) << describe(r);
  for (int rank : ranks) {
    std::string line = outcomeOf(r, rank);
    long ms = failedAfterMs(line);
    EXPECT_GE(ms, 0) << "rank " << rank << " did not report a failure\n" << describe(r);
    EXPECT_LE(ms, limitMs) << line;
    for (const std::string& name : names)
      EXPECT_NE(line.find(name), std::string::npos) << "\"" << name << "\" is not named: " << line;
  }
}

// Once with the default error mode (shared memory between same-host ranks, which UCX cannot
// watch: the neighbour watch and the timeouts catch the death) and once with TSR_ERR_MODE=peer
// (UCX peer-failure mode on every endpoint).
class ProcessKilled : public ::testing::TestWithParam<std::string> {};

TEST_P(ProcessKilled, KilledRankIsNamedByEveryOtherRankWithinTheTimeout) {
  // "arrival": UCX peer-failure mode, and the ring's receives posted on UCX's active messages
  // (TSR_ARRIVAL_REDUCE=on), which UCX holds no request of ours for: the transport fails them.
  std::vector<std::string> env = {"TSR_TIMEOUT_MS=5000"};
  if (GetParam() == "arrival")
    env.insert(env.end(), {"TSR_ERR_MODE=peer", "TSR_ARRIVAL_REDUCE=on", "TSR_ALGO=ring"});
  else
    env.push_back("TSR_ERR_MODE=" + GetParam());
  RunResult r = runJob(4, {"kill", "2"}, env, 90);
  expectFailedNaming(r, {0, 1, 3}, 5000 + 2000, {"rank 2"});
  // tsrun names the rank that failed first, how it ended, and exits with its status
  // (128 + SIGKILL).
  EXPECT_TRUE(std::regex_search(r.err, std::regex("(^|\n)tsrun: rank 2 \\(host [^)]+\\) killed by signal SIGKILL\n")))
      << describe(r);
  EXPECT_EQ(r.exitCode(), 128 + 9) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(ErrMode, ProcessKilled, ::testing::Values("auto", "peer", "arrival"),
                         [](const auto& info) { return info.param; });

// The same with 8-byte allreduces, which meet in shared memory on one host: the others wait on
// the dead rank's slot, not on a message, and still name it within the timeout.
TEST(ProcessFaults, KilledRankIsNamedDuringSharedMemoryAllreduces) {
  expectFailedNaming(runJob(4, {"kill", "2", "2"}, {"TSR_TIMEOUT_MS=5000"}, 90), {0, 1, 3}, 5000 + 2000, {"rank 2"});
}

// A stopped rank cannot take tsrun's SIGTERM, so the job lasts the whole grace after the first
// report: 4 s covers the others' reports, which the tests bound at 3 s after the timeout.
constexpr int kStoppedGrace = 4;

TEST(ProcessFaults, StoppedRankTimesOutSharedMemoryAllreduces) {
  expectFailedNaming(runJob(4, {"stop", "1", "2"}, {"TSR_TIMEOUT_MS=4000"}, 90, kStoppedGrace), {0, 2, 3}, 4000 + 3000,
                     {"TSR_ERR_TIMEOUT", "rank 1 ("});
}

// Its neighbours miss its heartbeats and name it, before anyone blames the rank it happens to
// wait on.
TEST(ProcessFaults, StoppedRankMakesTheOthersTimeOut) {
  RunResult r = runJob(4, {"stop", "1"}, {"TSR_TIMEOUT_MS=4000"}, 90, kStoppedGrace);
  EXPECT_NE(r.exitCode(), 0) << describe(r);
  expectFailedNaming(r, {0, 2, 3}, 4000 + 3000, {"TSR_ERR_TIMEOUT", "stopped responding", "rank 1 ("});
}

// A timeout raised after creation raises the neighbours' heartbeat limit with it: a rank
// stopped for 3 s, past half of TSR_TIMEOUT_MS=2000 but well within the 20 s every rank set,
// is waited for, and every allreduce completes (every rank failed after 1 s, "stopped
// responding").
TEST(ProcessFaults, ARankPausedWithinARaisedTimeoutIsWaitedFor) {
  RunResult r = runJob(4, {"pause", "1", "4096"}, {"TSR_TIMEOUT_MS=2000"}, 90);
  EXPECT_EQ(r.exitCode(), 0) << describe(r);
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_NE(r.out.find("rank " + std::to_string(rank) + ": OK after"), std::string::npos) << describe(r);
}

// The same while the others sleep on UCX's events (TSR_ERR_MODE=peer: TCP between the ranks,
// so TSR_WAIT=auto sleeps): heartbeats and timeouts are still looked at between the sleeps.
TEST(ProcessFaults, StoppedRankMakesSleepingRanksTimeOut) {
  RunResult r =
      runJob(4, {"stop", "1"}, {"TSR_TIMEOUT_MS=4000", "TSR_ERR_MODE=peer", "TSR_WAIT=auto"}, 90, kStoppedGrace);
  EXPECT_NE(r.exitCode(), 0) << describe(r);
  expectFailedNaming(r, {0, 2, 3}, 4000 + 3000, {"TSR_ERR_TIMEOUT", "stopped responding", "rank 1 ("});
}

// tsrun killed with SIGKILL cannot stop its ranks: each sees the end of the standard input
// tsrun held for it, sends itself SIGTERM (ignored by fault_worker) and SIGKILL after --grace.
TEST(ProcessFaults, RanksEndWhenTsrunIsKilled) {
  ChildProcess job({besideSelf("tsrun"), "-np", "3", "--grace", "1", besideSelf("fault_worker"), "hold"});
  for (int rank = 0; rank < 3; ++rank) {
    std::string up = "[" + std::to_string(rank) + "] rank " + std::to_string(rank) + ": up pid ";
    ASSERT_TRUE(job.waitForOutput(up, 60)) << up;
  }
  job.signal(SIGKILL);
  double killed = tools::tsrun::testing::nowSeconds();
  RunResult r = job.finish(10);
  std::vector<pid_t> pids;
  std::smatch m;
  for (const auto& line : r.outLines())
    if (std::regex_search(line, m, std::regex(": up pid ([0-9]+)$"))) pids.push_back(std::stoi(m[1]));
  ASSERT_EQ(pids.size(), 3u) << describe(r);
  for (pid_t pid : pids)  // the grace, and the watcher's poll of 1 s at most
    EXPECT_TRUE(tools::tsrun::testing::processGone(pid, 1 + 5)) << "rank process " << pid << " survived tsrun";
  EXPECT_LT(tools::tsrun::testing::nowSeconds() - killed, 1 + 5 + 1);
}

class ProcessMismatch : public ::testing::TestWithParam<std::string> {};

TEST_P(ProcessMismatch, EveryRankGetsMismatchNamingTheField) {
  std::string field = GetParam();
  RunResult r = runJob(4, {"mismatch", field}, {"TSR_TIMEOUT_MS=20000"}, 60);
  ASSERT_FALSE(r.timedOut) << describe(r);
  EXPECT_NE(r.exitCode(), 0) << describe(r);
  for (int rank = 0; rank < 4; ++rank) {
    std::string line = outcomeOf(r, rank);
    EXPECT_NE(line.find("TSR_ERR_MISMATCH"), std::string::npos) << "rank " << rank << ": " << line << "\n"
                                                                << describe(r);
    EXPECT_NE(line.find(field), std::string::npos) << line;
    EXPECT_LT(failedAfterMs(line), 10000) << line;
    // Both sides of the disagreement are named: rank 1 and the peer that compared headers
    // with it ("<field> differs: rank A called ... but rank B called ..."); which peer that
    // is depends on the algorithm the cost model chose (ring neighbours 0 and 2, recursive
    // doubling's partners 0 and 3).
    std::smatch m;
    ASSERT_TRUE(
        std::regex_search(line, m, std::regex(field + " differs: rank ([0-9]+) called .* but rank ([0-9]+) called")))
        << line;
    int a = std::stoi(m[1]), b = std::stoi(m[2]);
    EXPECT_NE(a, b) << line;
    EXPECT_TRUE(a == 1 || b == 1) << "rank 1 (the odd one) is not named: " << line;
    int other = a == 1 ? b : a;
    EXPECT_TRUE(other >= 0 && other < 4) << "rank 1's peer is not named: " << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Fields, ProcessMismatch, ::testing::Values("count", "dtype", "op"));

// Fresh communicators, one after another in each rank's process, each running a mismatch
// case to its end (fault_worker repeat): every repetition must go as it must on every rank,
// with nothing from UCX (an assertion, a failed shmat) on the way.
struct RepeatCase {
  std::string what;
  int ranks;
  bool hostPerRank;
  int reps;
};

class ProcessRepeat : public ::testing::TestWithParam<RepeatCase> {};

TEST_P(ProcessRepeat, EveryRepetitionEndsAsItMust) {
  const RepeatCase& c = GetParam();
  std::vector<std::string> env{"TSR_TIMEOUT_MS=20000"};
  if (c.hostPerRank) env.push_back("FAULT_HOST_PER_RANK=1");
  RunResult r = runJob(c.ranks, {"repeat", c.what, std::to_string(c.reps)}, env, 400);
  ASSERT_FALSE(r.timedOut) << describe(r);
  EXPECT_EQ(r.exitCode(), 0) << describe(r);
  for (int rank = 0; rank < c.ranks; ++rank)
    EXPECT_NE(outcomeOf(r, rank).find("OK " + std::to_string(c.reps) + " reps"), std::string::npos)
        << "rank " << rank << ": " << outcomeOf(r, rank) << "\n"
        << describe(r);
  for (const char* bad : {"Assertion", "shmat", "Segmentation", "Aborted"}) {
    EXPECT_EQ(r.out.find(bad), std::string::npos) << bad << "\n" << describe(r);
    EXPECT_EQ(r.err.find(bad), std::string::npos) << bad << "\n" << describe(r);
  }
}

std::string repeatName(const ::testing::TestParamInfo<RepeatCase>& info) {
  std::string name =
      info.param.what + "_N" + std::to_string(info.param.ranks) + (info.param.hostPerRank ? "_hosts" : "_onehost");
  for (char& ch : name)
    if (ch == '-') ch = '_';
  return name;
}

// Every case a few times here; many times (the races these repetitions once caught) in the
// full tier.
INSTANTIATE_TEST_SUITE_P(Mismatches, ProcessRepeat,
                         ::testing::Values(RepeatCase{"bcast-root", 4, true, 4}, RepeatCase{"bcast-root", 4, false, 4},
                                           RepeatCase{"mismatch-destroy", 3, true, 6},
                                           RepeatCase{"mismatch-destroy", 6, true, 3},
                                           RepeatCase{"then-mismatch", 4, false, 8},
                                           RepeatCase{"then-mismatch", 4, true, 4}),
                         repeatName);
INSTANTIATE_TEST_SUITE_P(
    FullMismatches, ProcessRepeat,
    ::testing::Values(RepeatCase{"bcast-root", 4, true, 20}, RepeatCase{"bcast-root", 4, false, 20},
                      RepeatCase{"mismatch-destroy", 3, true, 30}, RepeatCase{"mismatch-destroy", 6, true, 15},
                      RepeatCase{"then-mismatch", 4, false, 40}, RepeatCase{"then-mismatch", 4, true, 20}),
    repeatName);

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// TSR_LOG_FILE with %r and %h: one file per rank, named by rank and host, holding that rank's
// lines (each tagged with its rank) and only lines at or above TSR_LOG_LEVEL.
TEST(ProcessLogging, LogFilePerRankIsNamedByRankAndHostAndTagsEveryLine) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tsr_log_file_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  RunResult r = runJob(3, {"barrier"}, {"TSR_LOG_FILE=" + (dir / "job-%r-%h.log").string(), "TSR_LOG_LEVEL=info"}, 60);
  ASSERT_FALSE(r.timedOut) << describe(r);
  ASSERT_EQ(r.exitCode(), 0) << describe(r);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) (void)entry, ++files;
  EXPECT_EQ(files, 3) << "expected exactly job-<rank>-" << host << ".log for ranks 0..2";
  for (int rank = 0; rank < 3; ++rank) {
    fs::path file = dir / ("job-" + std::to_string(rank) + "-" + host + ".log");
    ASSERT_TRUE(fs::exists(file)) << file;
    std::string text = readFile(file);
    std::string tag = "[tessera rank " + std::to_string(rank) + "]";
    // Info lines are there (creation logs one), every line carries this rank's tag...
    EXPECT_NE(text.find("communicator ready: rank " + std::to_string(rank) + " of 3"), std::string::npos) << text;
    std::istringstream lines(text);
    int count = 0;
    for (std::string line; std::getline(lines, line); ++count)
      EXPECT_NE(line.find(tag), std::string::npos) << file << ": " << line;
    EXPECT_GT(count, 0);
    // ... and debug lines (the ring order, logged at creation) are not, at level info.
    EXPECT_EQ(text.find("[debug]"), std::string::npos) << text;
    EXPECT_EQ(text.find("ring order"), std::string::npos) << text;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tsr
