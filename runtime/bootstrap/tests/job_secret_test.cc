// A job of several ranks needs a job secret of 16 bytes or more, from TSR_JOB_SECRET or a
// private file (TSR_JOB_SECRET_FILE), whatever launched it; TSR_INSECURE=1 is the explicit way
// out, and the bootstrap itself refuses a LaunchInfo without one.
#include "runtime/bootstrap/job_secret.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <future>

#include "runtime/bootstrap/launch_env.h"
#include "runtime/bootstrap/tests/test_util.h"

namespace tsr::runtime {
namespace job_secret_test {  // named, not anonymous: the test binary is a unity build

const std::string kSecret = "0123456789abcdef0123";

void expectRefused(const EnvMap& env, std::initializer_list<std::string> needles) {
  auto r = launchInfoFromEnv(env);
  ASSERT_FALSE(r.isOk()) << "started without a usable secret";
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  for (const auto& n : needles)
    EXPECT_NE(r.status().message().find(n), std::string::npos) << r.status().message() << "\nlacks: " << n;
}

// Every launcher's variables for rank 1 of 2 on this host, no secret.
std::vector<EnvMap> launches() {
  return {
      {{"TSR_RANK", "1"}, {"TSR_WORLD_SIZE", "2"}, {"TSR_LOCAL_RANK", "1"}, {"TSR_LOCAL_SIZE", "2"}},
      {{"OMPI_COMM_WORLD_RANK", "1"},
       {"OMPI_COMM_WORLD_SIZE", "2"},
       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}},
      {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}},
      {{"SLURM_PROCID", "1"},
       {"SLURM_NTASKS", "2"},
       {"SLURM_LOCALID", "1"},
       {"SLURM_TASKS_PER_NODE", "2"},
       {"SLURM_JOB_NODELIST", "node1"}},
  };
}

std::string secretFile(const std::string& name, const std::string& text, mode_t mode) {
  std::string path = ::testing::TempDir() + "/job_secret_" + name;
  std::remove(path.c_str());
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
  return path;
}

TEST(JobSecret, EveryLauncherRefusesSeveralRanksWithoutOne) {
  for (const EnvMap& env : launches())
    expectRefused(env, {"a job of 2 ranks needs a job secret", "TSR_JOB_SECRET to the same random string",
                        "TSR_JOB_SECRET_FILE", "TSR_INSECURE=1"});
}

TEST(JobSecret, InsecureIsAnExplicitOptOut) {
  for (EnvMap env : launches()) {
    env["TSR_INSECURE"] = "1";
    auto r = launchInfoFromEnv(env);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_TRUE(r.value().insecure);
    EXPECT_EQ(r.value().secret, "");
    env["TSR_INSECURE"] = "0";
    expectRefused(env, {"TSR_INSECURE=1"});
  }
}

TEST(JobSecret, ShortSecretsAreRefusedEvenWhenInsecure) {
  for (EnvMap env : launches()) {
    env["TSR_JOB_SECRET"] = "fifteen-bytes!!";
    expectRefused(env, {"the job secret has 15 bytes; it needs 16 or more"});
    env["TSR_INSECURE"] = "1";
    expectRefused(env, {"15 bytes"});
    env["TSR_JOB_SECRET"] = "sixteen-bytes!!!";
    EXPECT_TRUE(launchInfoFromEnv(env).isOk());
  }
}

TEST(JobSecret, OneRankNeedsNone) {
  EXPECT_TRUE(launchInfoFromEnv({}).isOk());
  EXPECT_TRUE(
      launchInfoFromEnv({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"}}).isOk());
}

TEST(JobSecret, PrivateFileServesWhenTheVariableIsUnset) {
  EnvMap env = launches()[1];
  env["TSR_JOB_SECRET_FILE"] = secretFile("good", kSecret + "\n", 0600);
  auto r = launchInfoFromEnv(env);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r.value().secret, kSecret);  // without the newline
  env["TSR_JOB_SECRET_FILE"] = secretFile("owner-read-only", kSecret, 0400);
  EXPECT_TRUE(launchInfoFromEnv(env).isOk());
  env["TSR_JOB_SECRET"] = "another-secret-of-tsrun";  // the variable (tsrun's) wins
  EXPECT_EQ(launchInfoFromEnv(env).value().secret, "another-secret-of-tsrun");
}

TEST(JobSecret, FileOthersCanReadOrTooLargeIsRefused) {
  EnvMap env = launches()[2];
  std::string open = secretFile("readable", kSecret, 0644);
  env["TSR_JOB_SECRET_FILE"] = open;
  expectRefused(env, {"TSR_JOB_SECRET_FILE '" + open + "' has mode 0644", "chmod 600"});
  env["TSR_JOB_SECRET_FILE"] = secretFile("group", kSecret, 0640);
  expectRefused(env, {"mode 0640"});
  env["TSR_JOB_SECRET_FILE"] = secretFile("large", std::string(5000, 'k'), 0600);
  expectRefused(env, {"too large", "4096 bytes"});
  env["TSR_JOB_SECRET_FILE"] = secretFile("short", "short\n", 0600);
  expectRefused(env, {"5 bytes"});
  env["TSR_JOB_SECRET_FILE"] = secretFile("empty", "\n", 0600);
  expectRefused(env, {"is empty"});
  env["TSR_JOB_SECRET_FILE"] = secretFile("two-lines", kSecret + "\n" + kSecret + "\n", 0600);
  expectRefused(env, {"more than one line"});
  env["TSR_JOB_SECRET_FILE"] = ::testing::TempDir() + "/job_secret_missing";
  expectRefused(env, {"cannot be read"});
  // A FIFO without a writer would block the read for good; a directory is no file either.
  const std::string fifo = ::testing::TempDir() + "/job_secret_fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  env["TSR_JOB_SECRET_FILE"] = fifo;
  expectRefused(env, {"is not a regular file (a FIFO)"});
  ::unlink(fifo.c_str());
  env["TSR_JOB_SECRET_FILE"] = ::testing::TempDir();
  expectRefused(env, {"is not a regular file (a directory)"});
}

TEST(JobSecret, BootstrapRefusesALaunchWithoutOne) {
  auto infos = testing::localInfos(2, "");
  auto refused = Bootstrap::create(infos[0]);
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("TSR_INSECURE=1"), std::string::npos) << refused.status().message();
  infos = testing::localInfos(2, "short");
  EXPECT_NE(Bootstrap::create(infos[1]).status().message().find("5 bytes"), std::string::npos);
}

TEST(JobSecret, InsecureJobStartsAndSaysSoLoudly) {
  auto infos = testing::localInfos(2, "");
  for (auto& info : infos) info.insecure = true;
  testing::LogCapture log;
  BootstrapOptions options;
  options.timeoutMs = 20000;
  auto rank1 = std::async(std::launch::async, testing::runRank, infos[1], options, 1);
  testing::RankOutcome out0 = testing::runRank(infos[0], options, 1);
  EXPECT_TRUE(out0.status.isOk()) << out0.status.toString();
  EXPECT_TRUE(rank1.get().status.isOk());
  EXPECT_NE(log.text().find("[error]"), std::string::npos) << log.text();
  EXPECT_NE(log.text().find("the bootstrap is NOT authenticated"), std::string::npos) << log.text();
}

}  // namespace job_secret_test
}  // namespace tsr::runtime
