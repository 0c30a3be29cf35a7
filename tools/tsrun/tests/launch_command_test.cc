#include "tools/tsrun/launch_command.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace tsr::tools::tsrun {
namespace {

TEST(LaunchCommand, SplitCommandTemplate) {
  auto words = splitCommandTemplate("ssh -o BatchMode=yes");
  ASSERT_TRUE(words.isOk());
  EXPECT_EQ(words.value(), (std::vector<std::string>{"ssh", "-o", "BatchMode=yes"}));
  words = splitCommandTemplate("  /opt/my tool/rsh  'a b' \"c \\\"d\\\"\" e\\ f ");
  ASSERT_TRUE(words.isOk());
  EXPECT_EQ(words.value(), (std::vector<std::string>{"/opt/my", "tool/rsh", "a b", "c \"d\"", "e f"}));
  EXPECT_FALSE(splitCommandTemplate("ssh 'unterminated").isOk());
  EXPECT_FALSE(splitCommandTemplate("   ").isOk());
}

TEST(LaunchCommand, ShellQuote) {
  EXPECT_EQ(shellQuote("plain-word_1.2:3,4=5/6"), "plain-word_1.2:3,4=5/6");
  EXPECT_EQ(shellQuote("echo $TSR_RANK"), "'echo $TSR_RANK'");
  EXPECT_EQ(shellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(shellQuote(""), "''");
  EXPECT_EQ(shellQuote("a;b"), "'a;b'");
}

TEST(LaunchCommand, QuotingFollowsTheAgent) {
  EXPECT_TRUE(rshNeedsQuoting({"ssh", "-o", "BatchMode=yes"}, RshQuote::kAuto));
  EXPECT_TRUE(rshNeedsQuoting({"/work/shared/tools/netcluster.sh", "rsh"}, RshQuote::kAuto));
  EXPECT_FALSE(rshNeedsQuoting({"ip", "netns", "exec"}, RshQuote::kAuto));
  EXPECT_FALSE(rshNeedsQuoting({"/usr/sbin/ip", "netns", "exec"}, RshQuote::kAuto));
  EXPECT_FALSE(rshNeedsQuoting({"ssh"}, RshQuote::kNever));
  EXPECT_TRUE(rshNeedsQuoting({"ip", "netns", "exec"}, RshQuote::kAlways));
}

TEST(LaunchCommand, ResolveExports) {
  std::map<std::string, std::string> env = {{"HOME", "/root"}, {"EMPTY", ""}};
  auto lookup = [&](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto vars = resolveExports({"FOO=bar", "HOME", "EMPTY", "EQ=a=b", "FOO=baz"}, lookup);
  ASSERT_TRUE(vars.isOk()) << vars.status().toString();
  std::vector<EnvVar> expected = {{"FOO", "baz"}, {"HOME", "/root"}, {"EMPTY", ""}, {"EQ", "a=b"}};
  EXPECT_EQ(vars.value(), expected);

  auto unset = resolveExports({"NOPE"}, lookup);
  ASSERT_FALSE(unset.isOk());
  EXPECT_NE(unset.status().message().find("NOPE is not set"), std::string::npos);
  auto reserved = resolveExports({"TSR_RANK=3"}, lookup);
  ASSERT_FALSE(reserved.isOk());
  EXPECT_NE(reserved.status().message().find("set by tsrun"), std::string::npos);
  EXPECT_FALSE(resolveExports({"1BAD=x"}, lookup).isOk());
  EXPECT_FALSE(resolveExports({"=x"}, lookup).isOk());
  EXPECT_FALSE(resolveExports({"A-B=x"}, lookup).isOk());
  EXPECT_TRUE(resolveExports({"TSR_LOG_LEVEL=debug"}, lookup).isOk());
}

TEST(LaunchCommand, RankEnvironmentContract) {
  RankSlot slot;
  slot.rank = 2;
  slot.localRank = 1;
  slot.localSize = 3;
  JobInfo job{4, "a:1,a:2,b:1,b:2", std::string(64, 'f'), "0123456789abcdef", "2.5", "a", 29402};
  auto env = rankEnvironment(slot, job, {{"FOO", "bar"}});
  std::vector<EnvVar> expected = {
      {"TSR_RANK", "2"},         {"TSR_WORLD_SIZE", "4"},       {"TSR_LOCAL_RANK", "1"},
      {"TSR_LOCAL_SIZE", "3"},   {"TSR_PEERS", job.peers},      {"TSR_JOB_SECRET", job.secret},
      {"TSR_JOB_ID", job.jobId}, {"TSR_LAUNCHER_WATCH", "2.5"}, {"RANK", "2"},
      {"WORLD_SIZE", "4"},       {"LOCAL_RANK", "1"},           {"LOCAL_WORLD_SIZE", "3"},
      {"MASTER_ADDR", "a"},      {"MASTER_PORT", "29402"},      {"FOO", "bar"}};
  EXPECT_EQ(env, expected);
  ASSERT_EQ(launcherVariableNames().size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(env[i].name, launcherVariableNames()[i]);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(env[8 + i].name, torchrunVariableNames()[i]);
}

TEST(LaunchCommand, TorchrunVariablesGiveWayToTheUsersExports) {
  RankSlot slot;
  JobInfo job{2, "a:1,b:1", std::string(64, 'f'), "0123456789abcdef", "5", "a", 29401};
  auto env = rankEnvironment(slot, job, {{"MASTER_ADDR", "store.example"}, {"MASTER_PORT", "1234"}});
  auto count = [&](const std::string& name) {
    return std::count_if(env.begin(), env.end(), [&](const EnvVar& v) { return v.name == name; });
  };
  EXPECT_EQ(count("MASTER_ADDR"), 1);
  EXPECT_EQ(count("MASTER_PORT"), 1);
  EXPECT_EQ(env[env.size() - 2], (EnvVar{"MASTER_ADDR", "store.example"}));
  EXPECT_EQ(env.back(), (EnvVar{"MASTER_PORT", "1234"}));
}

TEST(LaunchCommand, OneOmpThreadWhereRanksShareAHost) {
  JobInfo job{2, "a:1,a:2", std::string(64, 'f'), "0123456789abcdef", "5", "a", 29401};
  job.oneOmpThread = true;
  RankSlot shared;
  shared.localSize = 2;
  RankSlot alone;
  alone.localSize = 1;
  auto has = [](const std::vector<EnvVar>& env, const EnvVar& var) {
    return std::find(env.begin(), env.end(), var) != env.end();
  };
  EXPECT_TRUE(has(rankEnvironment(shared, job, {}), {"OMP_NUM_THREADS", "1"}));
  EXPECT_FALSE(has(rankEnvironment(alone, job, {}), {"OMP_NUM_THREADS", "1"}));
  auto own = rankEnvironment(shared, job, {{"OMP_NUM_THREADS", "4"}});
  EXPECT_FALSE(has(own, {"OMP_NUM_THREADS", "1"}));
  EXPECT_TRUE(has(own, {"OMP_NUM_THREADS", "4"}));
  job.oneOmpThread = false;  // tsrun's environment had its own
  EXPECT_FALSE(has(rankEnvironment(shared, job, {}), {"OMP_NUM_THREADS", "1"}));
}

TEST(LaunchCommand, RendezvousAddressIsRankZerosHost) {
  RankSlot remote;
  remote.host = remote.peerHost = "tsr0";
  remote.localSize = 2;
  JobInfo job;
  setRendezvousAddress(job, {remote, remote}, 29400, 5555);
  EXPECT_EQ(job.masterAddr, "tsr0");
  EXPECT_EQ(job.masterPort, 29402);  // after rank 0's host's bootstrap ports 29400, 29401
  RankSlot local = remote;
  local.local = true;
  local.peerHost = "127.0.0.1";
  setRendezvousAddress(job, {local}, 29400, 5555);
  EXPECT_EQ(job.masterAddr, "127.0.0.1");
  EXPECT_EQ(job.masterPort, 5555);
}

TEST(LaunchCommand, MergeEnvironmentReplacesAndAdds) {
  auto env = mergeEnvironment({"PATH=/bin", "TSR_RANK=9", "FOO=old", "BARE"},
                              {{"TSR_RANK", "0"}, {"FOO", "new"}, {"NEW", "1"}});
  EXPECT_EQ(env, (std::vector<std::string>{"PATH=/bin", "BARE", "TSR_RANK=0", "FOO=new", "NEW=1"}));
}

TEST(LaunchCommand, RemoteArgvKeepsTheSecretOffTheCommandLine) {
  std::vector<EnvVar> env = {{"TSR_RANK", "1"}, {"TSR_JOB_SECRET", "s3cr3t"}, {"MSG", "a b"}};
  std::vector<std::string> program = {"/bin/sh", "-c", "echo $TSR_RANK"};
  auto quoted = remoteArgv({"ssh", "-o", "BatchMode=yes"}, "node1", env, program, true);
  ASSERT_EQ(quoted.size(), 14u);
  EXPECT_EQ(std::vector<std::string>(quoted.begin(), quoted.begin() + 6),
            (std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "node1", "sh", "-c"}));
  EXPECT_EQ(quoted[6].substr(0, 29), "'IFS= read -r TSR_JOB_SECRET ");
  EXPECT_EQ(
      std::vector<std::string>(quoted.begin() + 7, quoted.end()),
      (std::vector<std::string>{"tsrun-rank", "env", "TSR_RANK=1", "'MSG=a b'", "/bin/sh", "-c", "'echo $TSR_RANK'"}));
  auto direct = remoteArgv({"ip", "netns", "exec"}, "tsr0", env, program, false);
  EXPECT_EQ(direct[6].substr(0, 28), "IFS= read -r TSR_JOB_SECRET ");
  EXPECT_EQ(
      std::vector<std::string>(direct.begin() + 7, direct.end()),
      (std::vector<std::string>{"tsrun-rank", "env", "TSR_RANK=1", "MSG=a b", "/bin/sh", "-c", "echo $TSR_RANK"}));
  for (const auto& argv : {quoted, direct})
    for (const std::string& word : argv) EXPECT_EQ(word.find("s3cr3t"), std::string::npos) << word;
  JobInfo job{2, "a:1,b:1", "s3cr3t", "id", "5", "", 0};
  EXPECT_EQ(remoteInput(job), "s3cr3t\n");
  EXPECT_EQ(withoutVariable({"A=1", "TSR_JOB_SECRET=s3cr3t", "TSR_JOB_SECRET_FILE=f"}, "TSR_JOB_SECRET"),
            (std::vector<std::string>{"A=1", "TSR_JOB_SECRET_FILE=f"}));
}

}  // namespace
}  // namespace tsr::tools::tsrun
