#include "tools/tsrun/options.h"

#include <gtest/gtest.h>

namespace tsr::tools::tsrun {
namespace {

CommandLine parse(std::vector<std::string> args) {
  args.insert(args.begin(), "tsrun");
  return parseCommandLine(args);
}

using Words = std::vector<std::string>;

TEST(Options, MpirunStyleAndProgramOptionsUntouched) {
  CommandLine cl = parse({"-np", "4", "-x", "FOO=bar", "-x", "HOME", "prog", "-np", "2", "-x", "Y", "--help"});
  ASSERT_FALSE(cl.exitNow) << cl.output;
  EXPECT_EQ(cl.options.np, 4);
  EXPECT_EQ(cl.options.exports, (Words{"FOO=bar", "HOME"}));
  EXPECT_EQ(cl.options.program, (Words{"prog", "-np", "2", "-x", "Y", "--help"}));
  EXPECT_EQ(cl.options.rsh, kDefaultRsh);
  EXPECT_EQ(cl.options.rshQuote, RshQuote::kAuto);
}

TEST(Options, AllOptions) {
  CommandLine cl = parse({"--np=3", "--hostfile", "h.txt", "--rsh", "ip netns exec", "--rsh-quote", "never", "-xA=1",
                          "--timeout", "2.5", "--grace", "1", "--dry-run", "--", "/bin/sh", "-c", "echo hi"});
  ASSERT_FALSE(cl.exitNow) << cl.output;
  const LaunchOptions& o = cl.options;
  EXPECT_EQ(o.np, 3);
  EXPECT_EQ(o.hostfile, "h.txt");
  EXPECT_EQ(o.rsh, "ip netns exec");
  EXPECT_EQ(o.rshQuote, RshQuote::kNever);
  EXPECT_EQ(o.exports, (Words{"A=1"}));
  EXPECT_DOUBLE_EQ(o.timeoutSeconds, 2.5);
  EXPECT_DOUBLE_EQ(o.graceSeconds, 1.0);
  EXPECT_TRUE(o.dryRun);
  EXPECT_EQ(o.program, (Words{"/bin/sh", "-c", "echo hi"}));
}

TEST(Options, HostListWithoutNpUsesAllSlots) {
  CommandLine cl = parse({"-H", "a:2,b:2", "hostname"});
  ASSERT_FALSE(cl.exitNow) << cl.output;
  EXPECT_EQ(cl.options.np, 0);
  EXPECT_EQ(cl.options.hostList, "a:2,b:2");
}

TEST(Options, HelpDocumentsEverything) {
  CommandLine cl = parse({"--help"});
  ASSERT_TRUE(cl.exitNow);
  EXPECT_EQ(cl.exitCode, 0);
  for (const char* word : {"--np", "--hostfile", "-H", "--rsh", "--rsh-quote", "-x", "--timeout", "--grace",
                           "--dry-run", "slots=N", "TSR_PEERS", "TSR_JOB_SECRET", "TSR_BASE_PORT", "[rank]"}) {
    EXPECT_NE(cl.output.find(word), std::string::npos) << word;
  }
}

TEST(Options, UsageErrors) {
  struct Case {
    Words args;
    const char* expect;
  };
  std::vector<Case> cases = {
      {{"-np", "2"}, "no program"},
      {{"prog"}, "-np N is required"},
      {{"-np", "0", "prog"}, "np"},
      {{"-np", "x", "prog"}, "np"},
      {{"-np", "2", "--bogus", "prog"}, "unknown option '--bogus'"},
      {{"--hostfile", "h", "-H", "a", "prog"}, "exclude"},
      {{"-np", "2", "--rsh-quote", "maybe", "prog"}, "maybe"},
      {{"-np", "2", "--timeout", "-1", "prog"}, "timeout"},
      {{"-np", "2", "--grace", "20", "prog"}, "grace"},
      // An unknown option before -np is named (-np was once left as -n p after it).
      {{"--bogus", "-np", "2", "prog"}, "unknown option '--bogus'"},
      {{"-np", "2", "--timeout", "nan", "prog"}, "--timeout nan: not a number"},
      {{"-np", "2", "--grace", "nan", "prog"}, "--grace nan: not a number"},
      {{"--hostfile", "", "prog"}, "--hostfile is empty"},
  };
  for (const Case& c : cases) {
    CommandLine cl = parse(c.args);
    EXPECT_TRUE(cl.exitNow) << c.args.front();
    EXPECT_EQ(cl.exitCode, 2) << cl.output;
    EXPECT_NE(cl.output.find(c.expect), std::string::npos) << cl.output;
  }
}

}  // namespace
}  // namespace tsr::tools::tsrun
