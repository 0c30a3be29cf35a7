// What each rank is started with: its environment and, for remote hosts, the rsh command line.
// Pure functions; spawning lives in rank_process.{h,cc}.
//
// Vocabulary: the *rsh template* is the --rsh text split into words ("ssh -o BatchMode=yes",
// "ip netns exec"). A remote rank runs as
//     <rsh words...> <host> sh -c '<read the secret>' tsrun-rank env VAR=VALUE ... prog args...
// passed to execvp as an argv (no local shell). Agents like ssh join the words after the host
// into one string that the remote shell parses again, so for them each word is shell-quoted;
// agents that exec their argv directly (ip netns exec, nsenter, env, sudo, chroot) get the
// words unquoted. --rsh-quote=auto picks by the agent's program name.
// The job secret is on no command line (ps shows every user those): a remote rank's agent
// gets it on standard input (remoteInput), and the remote shell reads it with its `read`
// builtin into the environment before it execs the rank; local ranks receive it only through
// their environment.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tools/tsrun/rank_plan.h"

namespace tsr::tools::tsrun {

struct EnvVar {
  std::string name;
  std::string value;

  bool operator==(const EnvVar&) const = default;
};

enum class RshQuote { kAuto, kAlways, kNever };

// Values shared by every rank of one job.
struct JobInfo {
  int worldSize = 0;
  std::string peers;   // peersString(plan)
  std::string secret;  // 64 hex characters
  std::string jobId;
  std::string graceSeconds = "5";  // TSR_LAUNCHER_WATCH: SIGTERM -> SIGKILL once tsrun is gone
  // torchrun's rendezvous address: rank 0's host and a port free there (rendezvousAddress).
  std::string masterAddr;
  int masterPort = 0;
  // OMP_NUM_THREADS=1 for ranks that share a host with others, as torchrun does: each
  // process's OpenMP pool sized to every core oversubscribes them (PyTorch 2.x's spinning
  // workers made a 4-rank DDP step on 2 cores 6x slower). Set when tsrun's environment has none.
  bool oneOmpThread = false;
};

// The variables tsrun sets for every rank; -x cannot override them.
const std::vector<std::string>& launcherVariableNames();

// Splits an rsh template into words; supports '...' and "..." quoting and backslash escapes.
Result<std::vector<std::string>> splitCommandTemplate(std::string_view text);

// POSIX shell quoting: words made only of safe characters are returned unchanged.
std::string shellQuote(std::string_view word);

// Whether the words after the host must be shell-quoted for this agent.
bool rshNeedsQuoting(const std::vector<std::string>& rshWords, RshQuote mode);

// Resolves -x specs: "VAR=VALUE" is taken as is, "VAR" forwards lookup(VAR). Fails on a bad
// name, an unset VAR, or a launcher variable (TSR_RANK, ...).
Result<std::vector<EnvVar>> resolveExports(const std::vector<std::string>& specs,
                                           const std::function<std::optional<std::string>(const std::string&)>& lookup);

// The names torchrun gives every rank (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT): tsrun sets them too, so that a PyTorch script on any backend runs
// under tsrun as under torchrun. An -x of the same name wins over tsrun's value.
const std::vector<std::string>& torchrunVariableNames();

// Where a torchrun-style store would listen: rank 0's bootstrap host, and a port next to the
// bootstrap ports on its host (remote: basePort + the number of ranks there) or, when rank 0 is
// local, `freeLocalPort`.
void setRendezvousAddress(JobInfo& job, const std::vector<RankSlot>& plan, int basePort, int freeLocalPort);

// TSR_* variables of one rank, torchrun's (those not exported), OMP_NUM_THREADS=1 (see
// JobInfo), then the exported ones, in a fixed order.
std::vector<EnvVar> rankEnvironment(const RankSlot& slot, const JobInfo& job, const std::vector<EnvVar>& exports);

// base ("NAME=VALUE" strings, e.g. environ) with every variable of overrides replaced or added.
std::vector<std::string> mergeEnvironment(const std::vector<std::string>& base, const std::vector<EnvVar>& overrides);

// argv of a remote rank: rsh words, host, the shell that reads the secret from standard
// input, "env", VAR=VALUE... (TSR_JOB_SECRET left out), program and its arguments.
std::vector<std::string> remoteArgv(const std::vector<std::string>& rshWords, const std::string& host,
                                    const std::vector<EnvVar>& env, const std::vector<std::string>& program,
                                    bool quote);

// What a remote rank's agent gets on standard input: the job secret and a newline.
std::string remoteInput(const JobInfo& job);

// base without the variable `name`.
std::vector<std::string> withoutVariable(const std::vector<std::string>& base, const std::string& name);

}  // namespace tsr::tools::tsrun
