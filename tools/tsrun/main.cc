// tsrun: the Tessera launcher. Reads the command line and the hosts, plans the ranks, builds
// each rank's environment and command, and hands them to JobRunner. See options.cc for the
// user-facing description and job_runner.h for how a job ends.
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "tools/tsrun/exit_status.h"
#include "tools/tsrun/host_system.h"
#include "tools/tsrun/job_runner.h"
#include "tools/tsrun/options.h"

extern char** environ;

namespace tsr::tools::tsrun {
namespace {

using topology::parseHostfile;
using topology::parseHostList;
using topology::totalSlots;

constexpr int kSecretBytes = 32;
constexpr int kJobIdBytes = 8;

std::optional<std::string> lookupEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

Result<int> basePortFromEnv() {
  std::optional<std::string> text = lookupEnv("TSR_BASE_PORT");
  if (!text || text->empty()) return kDefaultBasePort;
  int port = 0;
  auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), port);
  if (ec != std::errc() || ptr != text->data() + text->size() || port < 1 || port > 65535) {
    return Status(Code::kInvalidArgument, "TSR_BASE_PORT='" + *text + "' is not a port number in 1..65535");
  }
  return port;
}

Result<std::vector<HostEntry>> loadHosts(const LaunchOptions& o, std::string& source) {
  if (!o.hostfile.empty()) {
    source = o.hostfile;
    TSR_ASSIGN_OR_RETURN(std::string text, readTextFile(o.hostfile));
    return parseHostfile(text, o.hostfile);
  }
  if (!o.hostList.empty()) {
    source = "-H " + o.hostList;
    return parseHostList(o.hostList);
  }
  source = "the default host list (localhost)";
  return std::vector<HostEntry>{HostEntry{"localhost", o.np, 1}};
}

// Everything up to the first spawn; errors here are usage errors (exit 2).
// One rank's process: local ranks run the program with the environment; remote ones through
// the agent, which gets the secret on stdin only (launch_command.h).
SpawnRequest spawnRequest(const RankSlot& slot, const std::vector<EnvVar>& env, const std::vector<std::string>& baseEnv,
                          const std::vector<std::string>& rsh, bool quote, const JobInfo& job,
                          const std::vector<std::string>& program) {
  SpawnRequest request;
  request.env = mergeEnvironment(baseEnv, env);
  if (slot.local) {
    request.argv = program;
  } else {
    request.env = withoutVariable(request.env, "TSR_JOB_SECRET");
    request.argv = remoteArgv(rsh, slot.host, env, program, quote);
    request.input = remoteInput(job);
  }
  return request;
}

Result<std::vector<RankLaunch>> prepare(const LaunchOptions& o) {
  PlanOptions plan;
  TSR_ASSIGN_OR_RETURN(std::vector<HostEntry> hosts, loadHosts(o, plan.source));
  plan.np = o.np > 0 ? o.np : totalSlots(hosts);
  TSR_ASSIGN_OR_RETURN(plan.basePort, basePortFromEnv());
  plan.localNames = localHostNames();
  plan.localAddress = plan.localNames.empty() ? "" : plan.localNames.front();
  TSR_ASSIGN_OR_RETURN(std::vector<RankSlot> slots, buildRankPlan(hosts, plan));
  // One more free port than local ranks: the rendezvous port when rank 0 is local.
  TSR_ASSIGN_OR_RETURN(std::vector<int> ports, pickFreePorts(countLocalRanks(slots) + 1));
  int rendezvousPort = ports.back();
  ports.pop_back();
  TSR_RETURN_IF_ERROR(assignLocalPorts(slots, ports));

  TSR_ASSIGN_OR_RETURN(std::vector<EnvVar> exports, resolveExports(o.exports, lookupEnv));
  TSR_ASSIGN_OR_RETURN(std::vector<std::string> rsh, splitCommandTemplate(o.rsh));
  bool quote = rshNeedsQuoting(rsh, o.rshQuote);
  JobInfo job;
  job.worldSize = static_cast<int>(slots.size());
  job.peers = peersString(slots);
  TSR_ASSIGN_OR_RETURN(job.secret, randomHex(kSecretBytes));
  TSR_ASSIGN_OR_RETURN(job.jobId, randomHex(kJobIdBytes));
  char grace[32];
  std::snprintf(grace, sizeof(grace), "%g", o.graceSeconds);
  job.graceSeconds = grace;
  setRendezvousAddress(job, slots, plan.basePort, rendezvousPort);
  job.oneOmpThread = !lookupEnv("OMP_NUM_THREADS").has_value();

  std::vector<std::string> baseEnv;
  for (char** e = environ; *e != nullptr; ++e) baseEnv.emplace_back(*e);
  std::vector<RankLaunch> launches;
  for (const RankSlot& slot : slots) {
    RankLaunch launch;
    launch.slot = slot;
    std::vector<EnvVar> env = rankEnvironment(slot, job, exports);
    launch.request = spawnRequest(slot, env, baseEnv, rsh, quote, job, o.program);
    if (o.respawn > 0) {  // the same rank started again, to join the running job
      env.push_back({"TSR_JOIN", "1"});
      launch.respawn = spawnRequest(slot, env, baseEnv, rsh, quote, job, o.program);
    }
    launches.push_back(std::move(launch));
  }
  return launches;
}

// The secret is on no command line, so the commands print as they run.
void printDryRun(const std::vector<RankLaunch>& launches) {
  for (const RankLaunch& l : launches) {
    const RankSlot& s = l.slot;
    std::string command = displayCommand(l.request.argv);
    std::cout << "rank " << s.rank << " host " << s.host << (s.local ? " (local)" : " (remote)") << " local_rank "
              << s.localRank << "/" << s.localSize << " bootstrap " << s.peerHost << ":" << s.port << "\n  " << command
              << "\n";
  }
  if (!launches.empty()) {
    for (const std::string& e : launches.front().request.env) {
      if (e.rfind("TSR_PEERS=", 0) == 0) std::cout << e << "\n";
    }
  }
}

int tsrunMain(int argc, char** argv) {
  CommandLine cl = parseCommandLine(std::vector<std::string>(argv, argv + argc));
  if (cl.exitNow) {
    (cl.exitCode == 0 ? std::cout : std::cerr) << cl.output << std::flush;
    return cl.exitCode;
  }
  Result<std::vector<RankLaunch>> launches = prepare(cl.options);
  if (!launches.isOk()) {
    std::cerr << "tsrun: " << launches.status().message() << "\n";
    return kExitUsage;
  }
  if (cl.options.dryRun) {
    printDryRun(launches.value());
    return 0;
  }
  JobSettings settings;
  settings.timeoutSeconds = cl.options.timeoutSeconds;
  settings.graceSeconds = cl.options.graceSeconds;
  settings.elastic = cl.options.elastic || cl.options.respawn > 0;
  settings.respawns = cl.options.respawn;
  JobRunner runner(launches.take(), settings);
  return runner.run();
}

}  // namespace
}  // namespace tsr::tools::tsrun

int main(int argc, char** argv) {
  try {
    return tsr::tools::tsrun::tsrunMain(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "tsrun: internal error: " << e.what() << "\n";
    return 1;
  }
}
