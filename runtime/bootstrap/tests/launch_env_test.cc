#include "runtime/bootstrap/launch_env.h"

#include <gtest/gtest.h>

#include <chrono>

namespace tsr::runtime {
namespace {

std::string peersText(const LaunchInfo& info) {
  std::string s;
  for (const auto& p : info.peers) {
    if (!s.empty()) s += ",";
    s += p.toString();
  }
  return s;
}

LaunchInfo ok(const EnvMap& env) {
  auto r = launchInfoFromEnv(env);
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return r.isOk() ? r.value() : LaunchInfo{};
}

// Expects an error whose message contains every one of `needles`.
void fails(const EnvMap& env, std::initializer_list<std::string> needles) {
  auto r = launchInfoFromEnv(env);
  ASSERT_FALSE(r.isOk()) << "expected an error";
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  for (const auto& n : needles)
    EXPECT_NE(r.status().message().find(n), std::string::npos)
        << "message '" << r.status().message() << "' lacks '" << n << "'";
}

const std::string kSecret = "0123456789abcdef0123";

EnvMap tsrun() {
  return {{"TSR_RANK", "1"},
          {"TSR_WORLD_SIZE", "3"},
          {"TSR_LOCAL_RANK", "1"},
          {"TSR_LOCAL_SIZE", "2"},
          {"TSR_PEERS", "a:100,a:101,b:100"},
          {"TSR_JOB_SECRET", kSecret},
          {"TSR_JOB_ID", "job9"}};
}

TEST(LaunchEnv, NoEnvironmentIsOneRank) {
  LaunchInfo info = ok({});
  EXPECT_EQ(info.source, "default");
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.size, 1);
  EXPECT_EQ(info.localSize, 1);
  EXPECT_EQ(peersText(info), "127.0.0.1:29400");
  EXPECT_EQ(info.secret, "");
}

TEST(LaunchEnv, Tsrun) {
  LaunchInfo info = ok(tsrun());
  EXPECT_EQ(info.source, "tsrun");
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.size, 3);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_EQ(info.localSize, 2);
  EXPECT_EQ(peersText(info), "a:100,a:101,b:100");
  EXPECT_EQ(info.secret, kSecret);
  EXPECT_EQ(info.jobId, "job9");
}

TEST(LaunchEnv, TsrunDerivesLocalRankFromPeerHosts) {
  EnvMap env = tsrun();
  env.erase("TSR_LOCAL_RANK");
  env.erase("TSR_LOCAL_SIZE");
  env["TSR_RANK"] = "2";
  LaunchInfo info = ok(env);
  EXPECT_EQ(info.localRank, 0);
  EXPECT_EQ(info.localSize, 1);
}

TEST(LaunchEnv, TsrunAllLocalWithoutPeers) {
  EnvMap env = {{"TSR_RANK", "2"},       {"TSR_WORLD_SIZE", "4"},     {"TSR_LOCAL_RANK", "2"},
                {"TSR_LOCAL_SIZE", "4"}, {"TSR_JOB_SECRET", kSecret}, {"TSR_BASE_PORT", "5000"}};
  EXPECT_EQ(peersText(ok(env)), "127.0.0.1:5000,127.0.0.1:5001,127.0.0.1:5002,127.0.0.1:5003");
}

TEST(LaunchEnv, TsrunBadValuesNameTheVariable) {
  auto with = [](const char* k, const char* v) {
    EnvMap e = tsrun();
    e[k] = v;
    return e;
  };
  fails(with("TSR_RANK", "abc"), {"TSR_RANK='abc'", "not an integer"});
  fails(with("TSR_RANK", "1x"), {"TSR_RANK='1x'"});
  fails(with("TSR_RANK", "-1"), {"TSR_RANK='-1'", "out of range"});
  fails(with("TSR_RANK", "3"), {"TSR_RANK=3", "TSR_WORLD_SIZE=3"});
  fails(with("TSR_WORLD_SIZE", "0"), {"TSR_WORLD_SIZE='0'"});
  fails(with("TSR_LOCAL_RANK", "2"), {"TSR_LOCAL_RANK=2", "TSR_LOCAL_SIZE=2"});
  fails(with("TSR_LOCAL_SIZE", "4"), {"TSR_LOCAL_SIZE=4", "TSR_WORLD_SIZE=3"});
  fails(with("TSR_PEERS", "a:100,a:101"), {"TSR_PEERS lists 2", "TSR_WORLD_SIZE=3"});
  fails(with("TSR_PEERS", "a:100,a:70000,b:1"), {"TSR_PEERS entry for rank 1", "a:70000", "70000"});
  fails(with("TSR_PEERS", "a:100,a:0,b:1"), {"rank 1", "'0'"});
  fails(with("TSR_PEERS", "a:100,noport,b:1"), {"rank 1", "'noport'", "host:port"});
  fails(with("TSR_PEERS", "a:100,:5,b:1"), {"rank 1", "empty host"});
  fails(with("TSR_PEERS", "a:100,a:100,b:1"), {"ranks 0 and 1", "a:100"});
  fails(with("TSR_PEERS", "a:1,::1:5,b:1"), {"rank 1", "[address]:port"});
  fails(with("TSR_PEERS", ""), {"TSR_PEERS", "empty"});
  EnvMap noSecret = tsrun();
  noSecret.erase("TSR_JOB_SECRET");
  fails(noSecret, {"TSR_JOB_SECRET", "TSR_JOB_SECRET_FILE", "TSR_INSECURE=1"});
  EnvMap noLocal = tsrun();
  noLocal.erase("TSR_PEERS");
  noLocal.erase("TSR_LOCAL_SIZE");
  fails(noLocal, {"TSR_LOCAL_SIZE is not set"});
  EnvMap noSize = tsrun();
  noSize.erase("TSR_WORLD_SIZE");
  fails(noSize, {"TSR_WORLD_SIZE is not set"});
}

// A million ranks is allowed, so the check that no two share an address must not compare
// every pair (that took minutes for 200000, optimised). The bound only has to tell minutes
// from seconds: the two parses take 0.3 s optimised and about 12 s under ASan on a loaded
// 2-core machine.
// Duplicates are found by sorting, not pairwise: four times the ranks take about four times as
// long (n log n), not sixteen (n^2). Judged as a ratio of two sizes, the best of three runs of
// each, interleaved, so the machine's speed and load (a sanitizer, other tests) cancel out.
TEST(LaunchEnv, DuplicatePeersAreFoundInNLogNTime) {
  // n distinct addresses, then `extra` (a duplicate of rank 6's, or nothing).
  auto job = [](int n, const std::string& extra) {
    std::string peers;
    for (int r = 0; r < n; ++r)
      peers += (r ? "," : "") + std::string("h") + std::to_string(r / 60000) + ":" + std::to_string(1 + r % 60000);
    int size = n + (extra.empty() ? 0 : 1);
    return EnvMap{{"TSR_RANK", "0"},
                  {"TSR_WORLD_SIZE", std::to_string(size)},
                  {"TSR_PEERS", peers + extra},
                  {"TSR_JOB_SECRET", kSecret}};
  };
  const int small = 12500, large = 4 * small;
  fails(job(large, ",h0:7"), {"ranks 6 and " + std::to_string(large), "h0:7"});
  // Timed on jobs without a duplicate: every pair would be compared by a pairwise check.
  EnvMap smallJob = job(small, ""), largeJob = job(large, "");
  double best[2] = {1e9, 1e9};
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 2; ++i) {
      auto start = std::chrono::steady_clock::now();
      EXPECT_TRUE(launchInfoFromEnv(i == 0 ? smallJob : largeJob).isOk());
      best[i] = std::min(best[i], std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  EXPECT_LT(best[1] / best[0], 9.0) << "4x the ranks took " << best[1] / best[0] << "x as long (" << best[0] << " s, "
                                    << best[1] << " s): the duplicate check is not n log n";
}

TEST(LaunchEnv, Ipv6Peers) {
  EnvMap env = tsrun();
  env["TSR_PEERS"] = "[::1]:100,[fe80::1]:7,b:1";
  LaunchInfo info = ok(env);
  ASSERT_EQ(info.peers.size(), 3u);
  EXPECT_EQ(info.peers[0].host, "::1");
  EXPECT_EQ(info.peers[1].port, 7);
  EXPECT_EQ(info.peers[1].toString(), "[fe80::1]:7");
}

EnvMap ompi(const char* rank, const char* size, const char* lrank, const char* lsize) {
  return {{"OMPI_COMM_WORLD_RANK", rank},        {"OMPI_COMM_WORLD_SIZE", size},
          {"OMPI_COMM_WORLD_LOCAL_RANK", lrank}, {"OMPI_COMM_WORLD_LOCAL_SIZE", lsize},
          {"PMIX_NAMESPACE", "prterun-x-1@1"},   {"TSR_JOB_SECRET", kSecret}};
}

TEST(LaunchEnv, OpenMpiAllLocalDerivesPeers) {
  LaunchInfo info = ok(ompi("1", "2", "1", "2"));
  EXPECT_EQ(info.source, "ompi");
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(peersText(info), "127.0.0.1:29400,127.0.0.1:29401");
  EXPECT_EQ(info.secret, kSecret);
  EXPECT_EQ(info.jobId, "prterun-x-1@1");
}

TEST(LaunchEnv, OpenMpiAcrossHostsNeedsPeers) {
  fails(ompi("1", "4", "1", "2"),
        {"TSR_PEERS is needed", "Open MPI", "OMPI_COMM_WORLD_LOCAL_SIZE=2", "OMPI_COMM_WORLD_SIZE=4"});
  EnvMap env = ompi("1", "4", "1", "2");
  env["TSR_PEERS"] = "h1:1,h1:2,h2:1,h2:2";
  env["TSR_JOB_ID"] = "mine";
  LaunchInfo info = ok(env);
  EXPECT_EQ(peersText(info), "h1:1,h1:2,h2:1,h2:2");
  EXPECT_EQ(info.secret, kSecret);
  EXPECT_EQ(info.jobId, "mine");
  fails(ompi("1", "2", "1", "x"), {"OMPI_COMM_WORLD_LOCAL_SIZE='x'"});
  EnvMap missing = ompi("0", "2", "0", "2");
  missing.erase("OMPI_COMM_WORLD_LOCAL_RANK");
  fails(missing, {"OMPI_COMM_WORLD_LOCAL_RANK is not set"});
}

TEST(LaunchEnv, Torchrun) {
  EnvMap env = {{"RANK", "3"},
                {"WORLD_SIZE", "4"},
                {"LOCAL_RANK", "3"},
                {"LOCAL_WORLD_SIZE", "4"},
                {"TORCHELASTIC_RUN_ID", "tr1"},
                {"TSR_BASE_PORT", "31000"},
                {"TSR_JOB_SECRET", kSecret}};
  LaunchInfo info = ok(env);
  EXPECT_EQ(info.source, "torchrun");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.peers[3].toString(), "127.0.0.1:31003");
  EXPECT_EQ(info.jobId, "tr1");
  env["LOCAL_WORLD_SIZE"] = "2";
  env["LOCAL_RANK"] = "1";
  fails(env, {"TSR_PEERS is needed", "torchrun"});
  env["TSR_BASE_PORT"] = "65535";
  env["LOCAL_WORLD_SIZE"] = "4";
  fails(env, {"TSR_BASE_PORT=65535"});
  env["TSR_BASE_PORT"] = "port";
  fails(env, {"TSR_BASE_PORT='port'"});
}

EnvMap slurm(const char* procid, const char* localid) {
  return {{"SLURM_PROCID", procid},
          {"SLURM_NTASKS", "7"},
          {"SLURM_LOCALID", localid},
          {"SLURM_JOB_NODELIST", "node[01-03],gpu5"},
          {"SLURM_TASKS_PER_NODE", "2(x3),1"},
          {"SLURM_JOB_ID", "123"},
          {"SLURM_STEP_ID", "0"},
          {"TSR_JOB_SECRET", kSecret}};
}

TEST(LaunchEnv, SlurmBlockDistributionDerivesPeers) {
  LaunchInfo info = ok(slurm("3", "1"));
  EXPECT_EQ(info.source, "slurm");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.size, 7);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_EQ(info.localSize, 2);
  EXPECT_EQ(peersText(info),
            "node01:29400,node01:29401,node02:29400,node02:29401,node03:29400,node03:29401,"
            "gpu5:29400");
  EXPECT_EQ(info.jobId, "123.0");
  EXPECT_EQ(info.secret, kSecret);
  LaunchInfo last = ok(slurm("6", "0"));
  EXPECT_EQ(last.localSize, 1);
}

TEST(LaunchEnv, SlurmErrors) {
  auto with = [](const char* k, const char* v) {
    EnvMap e = slurm("3", "1");
    e[k] = v;
    return e;
  };
  fails(with("SLURM_TASKS_PER_NODE", "2(x3)"), {"SLURM_TASKS_PER_NODE='2(x3)'", "6 tasks", "SLURM_NTASKS=7"});
  fails(with("SLURM_JOB_NODELIST", "node[01-03]"), {"SLURM_JOB_NODELIST='node[01-03]'", "3 nodes", "describes 4"});
  fails(with("SLURM_JOB_NODELIST", "node[01-03"), {"node[01-03", "unmatched"});
  fails(with("SLURM_TASKS_PER_NODE", "2(y3),1"), {"'2(y3),1'"});
  fails(with("SLURM_PROCID", "7"), {"SLURM_PROCID=7", "SLURM_NTASKS=7"});
  fails(with("SLURM_LOCALID", "0"), {"TSR_PEERS is needed", "not a block distribution"});
  fails(with("SLURM_DISTRIBUTION", "cyclic"), {"TSR_PEERS is needed", "SLURM_DISTRIBUTION='cyclic'"});
  EnvMap noNodes = slurm("3", "1");
  noNodes.erase("SLURM_JOB_NODELIST");
  fails(noNodes, {"TSR_PEERS is needed", "SLURM_JOB_NODELIST is not set"});
  EnvMap noTpn = slurm("3", "1");
  noTpn.erase("SLURM_TASKS_PER_NODE");
  fails(noTpn, {"SLURM_TASKS_PER_NODE is not set"});
}

TEST(LaunchEnv, SlurmCyclicWorksWithExplicitPeers) {
  EnvMap env = slurm("3", "0");
  env["SLURM_DISTRIBUTION"] = "cyclic";
  env["SLURM_NODEID"] = "3";
  env["TSR_PEERS"] = "n1:1,n2:1,n3:1,g:1,n1:2,n2:2,n3:2";
  LaunchInfo info = ok(env);
  EXPECT_EQ(info.localSize, 1);
  EXPECT_EQ(info.peers[3].host, "g");
}

TEST(LaunchEnv, FirstSourceWins) {
  EnvMap env = slurm("3", "1");
  EnvMap t = tsrun();
  env.insert(t.begin(), t.end());
  EXPECT_EQ(ok(env).source, "tsrun");
  EnvMap o = ompi("0", "1", "0", "1");
  EnvMap both = slurm("3", "1");
  both.insert(o.begin(), o.end());
  EXPECT_EQ(ok(both).source, "ompi");
  // srun torchrun: torchrun is the inner launcher, so its ranks win over Slurm's.
  EnvMap inner = slurm("0", "0");
  inner.insert({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}});
  LaunchInfo info = ok(inner);
  EXPECT_EQ(info.source, "torchrun");
  EXPECT_EQ(info.rank, 1);
}

TEST(LaunchEnv, PeersWithoutALauncherAreAnError) {
  fails({{"TSR_PEERS", "a:1,b:2"}}, {"TSR_PEERS lists 2", "which rank"});
  EXPECT_EQ(peersText(ok({{"TSR_PEERS", "myhost:4000"}})), "myhost:4000");
}

}  // namespace
}  // namespace tsr::runtime
