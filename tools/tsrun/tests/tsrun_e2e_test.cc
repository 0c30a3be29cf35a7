// End-to-end tests of the real tsrun binary (beside theirs): identity variables, output
// prefixing, failure handling, signals, -x, timeouts, hostfile errors and the rsh path with a
// fake agent. Each test keeps well under a few seconds except the ones that measure stopping.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "tools/tsrun/tests/e2e_support.h"

namespace tsr::tools::tsrun {
namespace {

using namespace testing;

TEST(TsrunEndToEnd, RanksGetRankWorldSizeAndLocalRank) {
  RunResult r = testing::run(tsrun({"-np", "3", "/bin/sh", "-c", "echo $TSR_RANK $TSR_WORLD_SIZE $TSR_LOCAL_RANK"}));
  ASSERT_EQ(r.exitCode(), 0) << describe(r);
  EXPECT_EQ(sorted(r.outLines()), (Words{"[0] 0 3 0", "[1] 1 3 1", "[2] 2 3 2"}));
  EXPECT_EQ(r.err, "");
}

TEST(TsrunEndToEnd, PeersSecretAndJobIdAreSharedByAllRanks) {
  Words cmd = tsrun({"-np", "3", "/bin/sh", "-c", "echo $TSR_PEERS $TSR_JOB_SECRET $TSR_JOB_ID $TSR_LOCAL_SIZE"});
  RunResult r = testing::run(cmd);
  ASSERT_EQ(r.exitCode(), 0) << describe(r);
  Words lines = r.outLines();
  ASSERT_EQ(lines.size(), 3u) << describe(r);
  std::set<std::string> bodies;
  for (const std::string& line : lines) bodies.insert(line.substr(4));
  ASSERT_EQ(bodies.size(), 1u) << "ranks disagree:\n" << r.out;
  std::smatch m;
  std::string body = *bodies.begin();
  std::regex shape(R"(127\.0\.0\.1:(\d+),127\.0\.0\.1:(\d+),127\.0\.0\.1:(\d+) ([0-9a-f]+) ([0-9a-f]+) 3)");
  ASSERT_TRUE(std::regex_match(body, m, shape)) << body;
  EXPECT_EQ((std::set<std::string>{m[1], m[2], m[3]}).size(), 3u) << "ports not distinct";
  EXPECT_EQ(m[4].length(), 64);
  EXPECT_GE(m[5].length(), 8);

  RunResult again = testing::run(cmd);
  ASSERT_EQ(again.exitCode(), 0);
  EXPECT_FALSE(contains(again.out, m[4].str())) << "the secret must differ between jobs";
}

TEST(TsrunEndToEnd, SecretIsNotOnLocalRanksCommandLine) {
  RunResult r =
      testing::run(tsrun({"-np", "1", "/bin/sh", "-c", "tr '\\0' ' ' < /proc/$$/cmdline; echo; echo $TSR_JOB_SECRET"}));
  ASSERT_EQ(r.exitCode(), 0) << describe(r);
  Words lines = r.outLines();
  ASSERT_EQ(lines.size(), 2u) << describe(r);
  std::string secret = lines[1].substr(4);
  ASSERT_EQ(secret.size(), 64u);
  EXPECT_FALSE(contains(lines[0], secret)) << lines[0];
}

TEST(TsrunEndToEnd, StdoutAndStderrArePrefixedSeparatelyWithoutMidLineMixing) {
  // Each line is written in two pieces; the last line of each stream has no newline.
  RunResult r = testing::run(tsrun({"-np", "4", "/bin/sh", "-c",
                                    "i=0; while [ $i -lt 200 ]; do printf 'aaaa'; printf 'bbbb\\n'; printf 'e' >&2; "
                                    "printf 'rr\\n' >&2; i=$((i+1)); done; printf tail; printf etail >&2"}));
  ASSERT_EQ(r.exitCode(), 0) << describe(r);
  std::regex outLine(R"(\[[0-3]\] (aaaabbbb|tail))");
  std::regex errLine(R"(\[[0-3]\] (err|etail))");
  Words out = r.outLines(), err = r.errLines();
  EXPECT_EQ(out.size(), 4u * 201);
  EXPECT_EQ(err.size(), 4u * 201);
  for (const std::string& line : out) ASSERT_TRUE(std::regex_match(line, outLine)) << line;
  for (const std::string& line : err) ASSERT_TRUE(std::regex_match(line, errLine)) << line;
  EXPECT_EQ(std::count(out.begin(), out.end(), "[2] tail"), 1);
  EXPECT_EQ(std::count(err.begin(), err.end(), "[3] etail"), 1);
}

// Shell words that wait (up to 10 s) until every file named after them exists.
constexpr const char* kWaitForFiles =
    "wait_for() { for f in \"$@\"; do i=0; while [ ! -e $f ] && [ $i -lt 200 ]; do "
    "sleep 0.05; i=$((i+1)); done; done; }; wait_for";

TEST(TsrunEndToEnd, FailingRankStopsTheJobAndSetsTheExitCode) {
  TempDir dir;
  // Ranks 0 and 2 sleep in a child process (recorded in a pid file): tsrun must stop those too.
  RunResult r = testing::run(tsrun({"-np", "3", "/bin/sh", "-c",
                                    "d=" + dir.path() + "; if [ $TSR_RANK = 1 ]; then " + kWaitForFiles +
                                        " $d/sleeper.0 $d/sleeper.2; exit 3; fi; "
                                        "sleep 30 & echo $! > $d/sleeper.tmp.$TSR_RANK; "
                                        "mv $d/sleeper.tmp.$TSR_RANK $d/sleeper.$TSR_RANK; wait; echo survived"}),
                             {}, 20);
  EXPECT_EQ(r.exitCode(), 3) << describe(r);
  EXPECT_LT(r.seconds, 12);
  EXPECT_TRUE(contains(r.err, "tsrun: rank 1 (host localhost) exited with status 3\n")) << r.err;
  EXPECT_FALSE(contains(r.out, "survived"));
  // Only the first failure is reported; ranks stopped by tsrun are not.
  EXPECT_FALSE(contains(r.err, "rank 0")) << r.err;
  EXPECT_FALSE(contains(r.err, "rank 2")) << r.err;
  for (const char* rank : {"0", "2"}) {
    std::ifstream in(dir.path() + "/sleeper." + rank);
    pid_t pid = 0;
    ASSERT_TRUE(in >> pid) << "rank " << rank << " wrote no pid";
    EXPECT_TRUE(processGone(pid, 2)) << "rank " << rank << "'s child " << pid << " survived";
  }
}

// --elastic: rank 1 exits with 3, then rank 2 is SIGKILLed; rank 0 goes on past both and ends
// normally. Each lost rank is named as it goes, the list at the end, and the exit status is
// the first lost rank's (rank 1's, unless the two are reaped in the other order).
TEST(TsrunEndToEnd, ElasticJobGoesOnPastFailedRanks) {
  TempDir dir;
  RunResult r = testing::run(tsrun({"--elastic", "-np", "3", "/bin/sh", "-c",
                                    "d=" + dir.path() +
                                        "; case $TSR_RANK in "
                                        "1) touch $d/one; exit 3;; "
                                        "2) " +
                                        kWaitForFiles +
                                        " $d/one; touch $d/two; kill -9 $$;; "
                                        "0) " +
                                        kWaitForFiles + " $d/two; echo survived;; esac"}),
                             {}, 20);
  EXPECT_TRUE(r.exitCode() == 3 || r.exitCode() == 137) << describe(r);
  EXPECT_TRUE(contains(r.out, "[0] survived")) << describe(r);
  EXPECT_TRUE(contains(r.err, "tsrun: rank 1 (host localhost) exited with status 3; --elastic: the other ranks go on"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "tsrun: rank 2 (host localhost) killed by signal SIGKILL")) << r.err;
  EXPECT_TRUE(contains(r.err, "tsrun: --elastic: 2 of 3 ranks lost: ")) << r.err;
  EXPECT_FALSE(contains(r.err, "rank 0")) << r.err;
}

// --respawn 2: rank 1 fails at first, and its first replacement (TSR_JOIN=1, its own rank and
// variables) fails too; the second ends well, as does rank 0: the job exits 0, each start and
// the replaced rank named. No third start: the respawns are spent.
TEST(TsrunEndToEnd, RespawnStartsAFailedRankAgainToJoin) {
  TempDir dir;
  RunResult r =
      testing::run(tsrun({"--respawn", "2", "-np", "2", "/bin/sh", "-c",
                          "d=" + dir.path() +
                              "; echo start $TSR_RANK join=${TSR_JOIN:-0} >> $d/starts; "
                              "if [ $TSR_RANK = 1 ] && [ $(grep -c 'start 1' $d/starts) -lt 3 ]; then exit 5; fi; "
                              "echo done $TSR_RANK join=${TSR_JOIN:-0}"}),
                   {}, 20);
  EXPECT_EQ(r.exitCode(), 0) << describe(r);
  EXPECT_TRUE(contains(r.out, "[1] done 1 join=1")) << describe(r);
  EXPECT_TRUE(contains(r.out, "[0] done 0 join=0")) << describe(r);
  EXPECT_TRUE(contains(r.err, "tsrun: --respawn: starting rank 1 again to join the others (1 respawns left)")) << r.err;
  EXPECT_TRUE(contains(r.err, "(0 respawns left)")) << r.err;
  EXPECT_TRUE(
      contains(r.err, "tsrun: --respawn: 2 failed rank(s) started again: 1 (host localhost), 1 (host localhost)"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "ranks lost")) << r.err;
}

// A replacement still waiting to join when every other rank has ended (the job's work done
// without it) is stopped --grace seconds later, and the job ends well: it would otherwise wait
// for its bootstrap's timeout with nobody left to let it in.
TEST(TsrunEndToEnd, AReplacementLeftAloneIsStoppedAndTheJobEndsWell) {
  RunResult r = testing::run(tsrun({"--respawn", "1", "--grace", "1", "-np", "3", "/bin/sh", "-c",
                                    "if [ \"${TSR_JOIN:-0}\" = 1 ]; then echo waiting; sleep 30; exit 3; fi; "
                                    "if [ $TSR_RANK = 2 ]; then exit 1; fi; echo done $TSR_RANK"}),
                             {}, 20);
  EXPECT_EQ(r.exitCode(), 0) << describe(r);
  EXPECT_TRUE(contains(r.out, "[2] waiting") && contains(r.out, "[0] done 0") && contains(r.out, "[1] done 1"))
      << describe(r);
  EXPECT_TRUE(contains(r.err, "--respawn: every other rank has ended; stopping the replacements still running"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "the replacement of rank 2 (host localhost) stopped: the others had ended")) << r.err;
  EXPECT_FALSE(contains(r.err, "ranks lost")) << r.err;
}

TEST(TsrunEndToEnd, SigintToTsrunIsForwarded) {
  TempDir dir;
  ChildProcess child(tsrun({"-np", "2", "/bin/sh", "-c", "trap 'echo got-int; exit 9' INT; echo up; sleep 30 & wait"}));
  ASSERT_TRUE(child.waitForOutput("[0] up", 10));
  ASSERT_TRUE(child.waitForOutput("[1] up", 10));
  child.signal(SIGINT);
  RunResult r = child.finish(20);
  EXPECT_EQ(r.exitCode(), 128 + SIGINT) << describe(r);
  EXPECT_TRUE(contains(r.out, "[0] got-int") && contains(r.out, "[1] got-int")) << describe(r);
  EXPECT_TRUE(contains(r.err, "got SIGINT; forwarding it to all ranks")) << r.err;
}

TEST(TsrunEndToEnd, RankKilledBySigkill) {
  RunResult r = testing::run(
      tsrun({"-np", "2", "/bin/sh", "-c", "if [ $TSR_RANK = 0 ]; then sleep 0.2; kill -9 $$; fi; sleep 30"}), {}, 20);
  EXPECT_EQ(r.exitCode(), 137) << describe(r);
  EXPECT_LT(r.seconds, 12);
  EXPECT_TRUE(contains(r.err, "tsrun: rank 0 (host localhost) killed by signal SIGKILL")) << r.err;
}

TEST(TsrunEndToEnd, RankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  TempDir dir;
  std::string flag = dir.path() + "/trapped";
  RunResult r = testing::run(tsrun({"-np", "2", "--grace", "1", "/bin/sh", "-c",
                                    "if [ $TSR_RANK = 0 ]; then " + std::string(kWaitForFiles) + " " + flag +
                                        "; exit 4; fi; trap '' TERM; touch " + flag + "; sleep 30 & wait; sleep 30"}),
                             {}, 20);
  EXPECT_EQ(r.exitCode(), 4) << describe(r);
  EXPECT_GE(r.seconds, 1.0);
  EXPECT_LT(r.seconds, 6);
}

TEST(TsrunEndToEnd, SigtermToTsrunStopsTheJob) {
  ChildProcess child(tsrun({"-np", "2", "/bin/sh", "-c", "echo up; sleep 30; echo survived"}));
  ASSERT_TRUE(child.waitForOutput("[0] up", 10));
  ASSERT_TRUE(child.waitForOutput("[1] up", 10));
  double sent = testing::nowSeconds();
  child.signal(SIGTERM);
  RunResult r = child.finish(20);
  EXPECT_EQ(r.exitCode(), 128 + SIGTERM) << describe(r);
  EXPECT_LT(testing::nowSeconds() - sent, 10);
  EXPECT_TRUE(contains(r.err, "got SIGTERM")) << r.err;
  EXPECT_FALSE(contains(r.out, "survived"));
}

TEST(TsrunEndToEnd, ExportedVariablesArrive) {
  RunResult r = testing::run(tsrun({"-np", "2", "-x", "FOO=bar", "-x", "TSRUN_TEST_FORWARDED", "-x", "SPACED=a b",
                                    "/bin/sh", "-c", "echo \"$FOO|$TSRUN_TEST_FORWARDED|$SPACED\""}),
                             {"TSRUN_TEST_FORWARDED=from-parent"});
  ASSERT_EQ(r.exitCode(), 0) << describe(r);
  EXPECT_EQ(sorted(r.outLines()), (Words{"[0] bar|from-parent|a b", "[1] bar|from-parent|a b"}));

  RunResult unset = testing::run(tsrun({"-np", "1", "-x", "TSRUN_TEST_UNSET_VAR", "true"}));
  EXPECT_EQ(unset.exitCode(), 2);
  EXPECT_TRUE(contains(unset.err, "TSRUN_TEST_UNSET_VAR is not set")) << unset.err;
}

TEST(TsrunEndToEnd, TimeoutKillsTheJob) {
  RunResult r = testing::run(tsrun({"-np", "2", "--timeout", "0.5", "sleep", "30"}), {}, 20);
  EXPECT_EQ(r.exitCode(), 124) << describe(r);
  EXPECT_LT(r.seconds, 5);
  EXPECT_TRUE(contains(r.err, "--timeout 0.5")) << r.err;
}

TEST(TsrunEndToEnd, ProgramThatCannotStart) {
  RunResult r = testing::run(tsrun({"-np", "2", "/nonexistent/tsrun-test-prog"}));
  EXPECT_EQ(r.exitCode(), 127) << describe(r);
  EXPECT_TRUE(contains(r.err, "cannot start rank 0 (host localhost)")) << r.err;
  EXPECT_TRUE(contains(r.err, "/nonexistent/tsrun-test-prog")) << r.err;
  // Found but not executable (a directory): 126, as a shell says it.
  TempDir dir;
  RunResult notExec = testing::run(tsrun({"-np", "1", dir.path()}));
  EXPECT_EQ(notExec.exitCode(), 126) << describe(notExec);
  EXPECT_TRUE(contains(notExec.err, "Permission denied")) << notExec.err;
}

TEST(TsrunEndToEnd, HostfileErrorsNameFileAndLine) {
  TempDir dir;
  std::string bad = dir.write("bad_hosts", "# test\nlocalhost slots=0\n");
  RunResult r = testing::run(tsrun({"--hostfile", bad, "true"}));
  EXPECT_EQ(r.exitCode(), 2);
  EXPECT_TRUE(contains(r.err, bad + ":2: bad slot count '0'")) << r.err;

  std::string keyword = dir.write("kw_hosts", "localhost cpus=2\n");
  r = testing::run(tsrun({"--hostfile", keyword, "true"}));
  EXPECT_EQ(r.exitCode(), 2);
  EXPECT_TRUE(contains(r.err, keyword + ":1: unknown keyword 'cpus=2'")) << r.err;

  std::string empty = dir.write("empty_hosts", "");
  r = testing::run(tsrun({"--hostfile", empty, "true"}));
  EXPECT_EQ(r.exitCode(), 2);
  EXPECT_TRUE(contains(r.err, empty + ": hostfile lists no hosts")) << r.err;

  std::string small = dir.write("small_hosts", "localhost slots=2\n");
  r = testing::run(tsrun({"-np", "3", "--hostfile", small, "true"}));
  EXPECT_EQ(r.exitCode(), 2);
  EXPECT_TRUE(contains(r.err, "-np 3 is larger than the 2 slots in " + small)) << r.err;

  r = testing::run(tsrun({"--hostfile", dir.path() + "/missing", "true"}));
  EXPECT_EQ(r.exitCode(), 2);
  EXPECT_TRUE(contains(r.err, "missing' cannot be read")) << r.err;
}

TEST(TsrunEndToEnd, HostfileWithoutNpRunsOnAllSlots) {
  TempDir dir;
  std::string hosts = dir.write("hosts", "localhost slots=2\n127.0.0.1:1\n");
  RunResult r = testing::run(
      tsrun({"--hostfile", hosts, "/bin/sh", "-c", "echo $TSR_WORLD_SIZE $TSR_LOCAL_RANK $TSR_LOCAL_SIZE"}));
  ASSERT_EQ(r.exitCode(), 0) << describe(r);
  EXPECT_EQ(sorted(r.outLines()), (Words{"[0] 3 0 3", "[1] 3 1 3", "[2] 3 2 3"}));
}

// An ssh-like agent: records the host, then runs the remaining words through a shell.
constexpr const char* kSshLikeRsh =
    "#!/bin/sh\n"
    "echo \"$1\" >> \"$(dirname \"$0\")/hosts.log\"\n"
    "shift\n"
    "exec /bin/sh -c \"$*\"\n";

// An exec-style agent (like ip netns exec): records the host, then execs its argv.
constexpr const char* kExecRsh =
    "#!/bin/sh\n"
    "echo \"$1\" >> \"$(dirname \"$0\")/hosts.log\"\n"
    "shift\n"
    "exec \"$@\"\n";

TEST(TsrunEndToEnd, RemoteHostsGoThroughAnSshLikeAgent) {
  TempDir dir;
  std::string rsh = dir.write("fake_ssh", kSshLikeRsh, true);
  std::string hosts = dir.write("hosts", "fakehost1 slots=2\n");
  RunResult r = testing::run(tsrun({"--hostfile", hosts, "--rsh", rsh, "-x", "MSG=it's a b", "/bin/sh", "-c",
                                    "echo $TSR_RANK $TSR_LOCAL_RANK $TSR_PEERS \"$MSG\" ${#TSR_JOB_SECRET}"}),
                             {"TSR_BASE_PORT=31000"});
  ASSERT_EQ(r.exitCode(), 0) << describe(r);
  EXPECT_EQ(sorted(r.outLines()), (Words{"[0] 0 0 fakehost1:31000,fakehost1:31001 it's a b 64",
                                         "[1] 1 1 fakehost1:31000,fakehost1:31001 it's a b 64"}));
  EXPECT_EQ(readFile(dir.path() + "/hosts.log"), "fakehost1\nfakehost1\n");
}

TEST(TsrunEndToEnd, RemoteHostsThroughAnExecStyleAgent) {
  TempDir dir;
  std::string rsh = dir.write("fake_netns_exec", kExecRsh, true);
  RunResult r = testing::run(tsrun({"-H", "fakehost1:1,fakehost2:1", "--rsh", rsh, "--rsh-quote", "never", "/bin/sh",
                                    "-c", "echo $TSR_RANK $TSR_PEERS"}));
  ASSERT_EQ(r.exitCode(), 0) << describe(r);
  EXPECT_EQ(sorted(r.outLines()),
            (Words{"[0] 0 fakehost1:29400,fakehost2:29400", "[1] 1 fakehost1:29400,fakehost2:29400"}));
  std::string log = readFile(dir.path() + "/hosts.log");
  EXPECT_TRUE(contains(log, "fakehost1\n") && contains(log, "fakehost2\n")) << log;
}

TEST(TsrunEndToEnd, RemoteRankFailureIsReportedWithItsHost) {
  TempDir dir;
  std::string rsh = dir.write("fake_ssh", kSshLikeRsh, true);
  RunResult r = testing::run(tsrun({"-H", "localhost:1,fakehost1:1", "--rsh", rsh, "/bin/sh", "-c",
                                    "if [ $TSR_RANK = 1 ]; then exit 7; fi; sleep 30"}),
                             {}, 20);
  EXPECT_EQ(r.exitCode(), 7) << describe(r);
  EXPECT_TRUE(contains(r.err, "tsrun: rank 1 (host fakehost1) exited with status 7")) << r.err;
  EXPECT_LT(r.seconds, 12);
  // Only the remote rank went through the agent.
  EXPECT_EQ(readFile(dir.path() + "/hosts.log"), "fakehost1\n");
}

// The real agent the netcluster tests use: ranks inside a network namespace of our own.
TEST(TsrunEndToEnd, IpNetnsExecAgentWhenRoot) {
  std::string ns = "tsrun_e2e_" + std::to_string(getpid());
  if (geteuid() != 0 || std::system(("ip netns add " + ns + " 2>/dev/null").c_str()) != 0) {
    GTEST_SKIP() << "needs root and iproute2 to create a network namespace";
  }
  RunResult r = testing::run(tsrun({"-H", ns + ":2", "--rsh", "ip netns exec", "/bin/sh", "-c",
                                    "echo $TSR_RANK $TSR_LOCAL_RANK $TSR_PEERS; "
                                    "ip -o link | grep -c ."}),
                             {}, 20);
  RunResult failed = testing::run(
      tsrun({"-H", ns + ":2", "--rsh", "ip netns exec", "/bin/sh", "-c", "[ $TSR_RANK = 0 ] && exec sleep 30; exit 6"}),
      {}, 20);
  std::system(("ip netns delete " + ns).c_str());
  EXPECT_EQ(r.exitCode(), 0) << describe(r);
  std::string peers = ns + ":29400," + ns + ":29401";
  EXPECT_TRUE(contains(r.out, "[0] 0 0 " + peers + "\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "[1] 1 1 " + peers + "\n")) << r.out;
  // A fresh namespace has only the loopback interface.
  EXPECT_TRUE(contains(r.out, "[0] 1\n") && contains(r.out, "[1] 1\n")) << r.out;
  EXPECT_EQ(failed.exitCode(), 6) << describe(failed);
  EXPECT_LT(failed.seconds, 12);
  EXPECT_TRUE(contains(failed.err, "tsrun: rank 1 (host " + ns + ") exited with status 6")) << failed.err;
}

TEST(TsrunEndToEnd, DryRunShowsNoSecret) {
  RunResult r = testing::run(
      tsrun({"--dry-run", "-H", "localhost:1,fakehost1:1", "--rsh", "ssh -o BatchMode=yes", "echo", "hi"}));
  ASSERT_EQ(r.exitCode(), 0) << describe(r);
  EXPECT_TRUE(contains(r.out,
                       "rank 1 host fakehost1 (remote) local_rank 0/1 bootstrap "
                       "fakehost1:29400"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "ssh -o BatchMode=yes fakehost1 sh -c ")) << r.out;
  EXPECT_TRUE(contains(r.out, "IFS= read -r TSR_JOB_SECRET ")) << r.out;
  EXPECT_TRUE(contains(r.out, "tsrun-rank env TSR_RANK=1")) << r.out;
  EXPECT_FALSE(contains(r.out, "TSR_JOB_SECRET=")) << r.out;
  EXPECT_FALSE(std::regex_search(r.out, std::regex("[0-9a-f]{64}"))) << r.out;
}

TEST(TsrunEndToEnd, HelpAndUsageErrors) {
  RunResult help = testing::run(tsrun({"--help"}));
  EXPECT_EQ(help.exitCode(), 0);
  EXPECT_TRUE(contains(help.out, "--hostfile")) << help.out;
  RunResult usage = testing::run(tsrun({"-np", "2"}));
  EXPECT_EQ(usage.exitCode(), 2);
  EXPECT_TRUE(contains(usage.err, "no program to run")) << usage.err;
}

}  // namespace
}  // namespace tsr::tools::tsrun
