// The real tsrun binary against hostfiles an accident or a stranger could hand it: host names
// that an rsh agent would read as options never reach the agent.
#include <filesystem>

#include <gtest/gtest.h>

#include "tools/tsrun/tests/e2e_support.h"

namespace tsr::tools::tsrun {
namespace tsrun_hosts_test {  // named, not anonymous: the test binary is a unity build

using namespace testing;

// An ssh-like agent that writes its whole command line to argv.log (as ps would show it),
// then runs the remote words through a shell with its standard input passed on.
constexpr const char* kLoggingRsh =
    "#!/bin/sh\n"
    "echo \"$0 $*\" >> \"$(dirname \"$0\")/argv.log\"\n"
    "shift\n"
    "exec /bin/sh -c \"$*\"\n";

// A hostfile line `-Fevil_config` once reached ssh as its -F option: ssh read that config
// file from tsrun's folder and ran its ProxyCommand here.
TEST(TsrunHosts, HostsThatLookLikeOptionsNeverReachTheAgent) {
  TempDir dir;
  std::string rsh = dir.write("fake_ssh", kLoggingRsh, true);
  dir.write("evil_config", "ProxyCommand touch " + dir.path() + "/pwned\n");
  std::string hosts = dir.write("hosts", "-Fevil_config slots=1\n");
  auto inDir = [&](Words args) {  // tsrun started from the folder that holds evil_config
    Words sh = {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", dir.path()};
    for (const std::string& a : tsrun(args)) sh.push_back(a);
    return sh;
  };
  for (const Words& where : {Words{"--hostfile", hosts}, Words{"-H", "-Fevil_config:1"}}) {
    Words args = where;
    for (const char* w : {"--rsh", "ssh -o BatchMode=yes", "true"}) args.push_back(w);
    RunResult r = testing::run(inDir(args), {}, 20);
    EXPECT_EQ(r.exitCode(), 2) << describe(r);
    EXPECT_TRUE(contains(r.err, "bad host name '-Fevil_config'")) << r.err;
  }
  RunResult fake = testing::run(inDir({"--hostfile", hosts, "--rsh", rsh, "true"}));
  EXPECT_EQ(fake.exitCode(), 2) << describe(fake);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/argv.log")) << "the agent ran:\n"
                                                                  << readFile(dir.path() + "/argv.log");
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/pwned")) << "ssh ran the stranger's ProxyCommand";
}

TEST(TsrunHosts, HostfileTooLargeToBeOneIsRefused) {
  TempDir dir;
  std::string big = dir.write("big_hosts", std::string((1 << 20) + 1, '#'));
  RunResult r = testing::run(tsrun({"--hostfile", big, "true"}));
  EXPECT_EQ(r.exitCode(), 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "hostfile '" + big + "' is too large (1048577 bytes; the limit is 1048576 bytes)"))
      << r.err;
  r = testing::run(tsrun({"--hostfile", "/dev/zero", "true"}), {}, 20);
  EXPECT_EQ(r.exitCode(), 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "hostfile '/dev/zero' is too large")) << r.err;
}

}  // namespace tsrun_hosts_test
}  // namespace tsr::tools::tsrun
