// The real tsrun binary keeps the job secret off every command line (ps shows those to every
// user, here and on the remote host): a remote rank's agent gets it on standard input, and an
// agent that drops its standard input makes the rank fail saying so.
#include <regex>

#include <gtest/gtest.h>

#include "tools/tsrun/tests/e2e_support.h"

namespace tsr::tools::tsrun {
namespace {

using namespace testing;

// An ssh-like agent that writes its whole command line to argv.log (as ps would show it),
// then runs the remote words through a shell with its standard input passed on.
constexpr const char* kLoggingRsh =
    "#!/bin/sh\n"
    "echo \"$0 $*\" >> \"$(dirname \"$0\")/argv.log\"\n"
    "shift\n"
    "exec /bin/sh -c \"$*\"\n";

// The same, but like `ssh -n`: the remote side gets no standard input.
constexpr const char* kNoStdinRsh =
    "#!/bin/sh\n"
    "shift\n"
    "exec /bin/sh -c \"$*\" < /dev/null\n";

TEST(TsrunSecret, RemoteRanksGetTheSecretOnStdinNotOnACommandLine) {
  TempDir dir;
  std::string rsh = dir.write("fake_ssh", kLoggingRsh, true);
  // Each rank counts the processes whose command line holds the secret, as another user's ps
  // would see them (the pattern goes through a file: echo is a builtin, grep's argv stays clean).
  std::string d = dir.path();
  RunResult r = testing::run(tsrun({"-H", "fakehost1:2", "--rsh", rsh, "/bin/sh", "-c",
                                    "echo $TSR_JOB_SECRET > " + d +
                                        "/pattern.$TSR_RANK; echo secret=$TSR_JOB_SECRET; "
                                        "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done | "
                                        "grep -c -F -f " +
                                        d + "/pattern.$TSR_RANK || true"}));
  ASSERT_EQ(r.exitCode(), 0) << describe(r);
  EXPECT_EQ(r.outLines().size(), 4u) << describe(r);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("\\[0\\] secret=([0-9a-f]{64})\n"))) << r.out;
  std::string secret = m[1];
  EXPECT_TRUE(contains(r.out, "[1] secret=" + secret + "\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "[0] 0\n") && contains(r.out, "[1] 0\n")) << r.out;
  std::string argvLog = readFile(d + "/argv.log");
  EXPECT_TRUE(contains(argvLog, "fakehost1 sh -c")) << argvLog;
  EXPECT_FALSE(contains(argvLog, secret)) << "the agent's command line holds the secret:\n" << argvLog;
}

TEST(TsrunSecret, AgentThatDropsStdinFailsNamingTheCause) {
  TempDir dir;
  std::string rsh = dir.write("fake_ssh_n", kNoStdinRsh, true);
  RunResult r = testing::run(tsrun({"-H", "fakehost1:1", "--rsh", rsh, "/bin/echo", "started"}));
  EXPECT_EQ(r.exitCode(), 1) << describe(r);
  EXPECT_FALSE(contains(r.out, "started")) << r.out;
  EXPECT_TRUE(contains(r.err,
                       "tsrun: no job secret on standard input (the --rsh agent must pass its standard "
                       "input on)"))
      << r.err;
}

}  // namespace
}  // namespace tsr::tools::tsrun
