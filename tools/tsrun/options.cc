#include "tools/tsrun/options.h"

#include <CLI/CLI.hpp>

#include <cmath>

#include "tools/tsrun/exit_status.h"

namespace tsr::tools::tsrun {
namespace {

constexpr const char* kDescription =
    "tsrun: launch a Tessera job of N ranks on local and remote hosts.\n"
    "\n"
    "  tsrun -np N [options] prog [args...]\n"
    "\n"
    "Ranks fill the hosts' slots in order (like mpirun --map-by slot). Hosts named localhost,\n"
    "127.x.x.x or this machine's hostname are started directly; other hosts through the --rsh\n"
    "agent as: <rsh words> <host> sh -c '<read the secret>' tsrun-rank env TSR_...=... VAR=VALUE\n"
    "... prog args..., with the job secret on the agent's standard input (never on a command\n"
    "line); local ranks get it only through the environment.\n"
    "\n"
    "Hostfile lines: 'host slots=N', 'host:N', 'host' (1 slot); '#' comments, blank lines.\n"
    "Without --hostfile/-H the job runs N ranks on localhost.\n"
    "\n"
    "Every rank gets: TSR_RANK, TSR_WORLD_SIZE, TSR_LOCAL_RANK, TSR_LOCAL_SIZE,\n"
    "TSR_PEERS (host:port bootstrap address of every rank, comma-separated, rank order),\n"
    "TSR_JOB_SECRET (64 hex chars), TSR_JOB_ID; torchrun's RANK, WORLD_SIZE, LOCAL_RANK,\n"
    "LOCAL_WORLD_SIZE, MASTER_ADDR (rank 0's host) and MASTER_PORT (a free port there), so that\n"
    "a PyTorch script on any backend runs as under torchrun; plus every -x variable (an -x of\n"
    "one of torchrun's names wins over tsrun's value); OMP_NUM_THREADS=1 where a host runs\n"
    "several ranks and tsrun's environment sets none (as torchrun). Local ranks also\n"
    "inherit tsrun's environment. Bootstrap ports: free ports on this machine for local ranks;\n"
    "TSR_BASE_PORT (default 29400) + local rank on remote hosts.\n"
    "\n"
    "Output lines are prefixed with '[rank] ' (rank stdout -> stdout, stderr -> stderr).\n"
    "SIGINT, SIGTERM, SIGHUP and SIGQUIT are forwarded to all ranks. When a rank exits\n"
    "non-zero or dies, tsrun names it, stops the others (SIGTERM, then SIGKILL after --grace\n"
    "seconds) and exits with its status (128+signal for a signal); 124 on --timeout, 127 when\n"
    "a rank's program is not found (126: not executable), 2 for usage errors. With --elastic a failed rank is named "
    "and the\n"
    "others go on: the job ends when every rank has ended, with the first failed rank's status\n"
    "and the list of the ranks lost. With --respawn N a failed rank is also started again on\n"
    "its host with its own variables and TSR_JOIN=1, to join the survivors (up to N times in\n"
    "all); a job whose lost ranks were all replaced and whose ranks then end well exits 0.\n"
    "Replacements still running --grace seconds after every other rank has ended are stopped\n"
    "(nobody is left to let them in) and count as no loss.\n";

// Rewrites mpirun's "-np" among tsrun's own options; stops at the program.
std::vector<std::string> normalizeArgs(const CLI::App& app, std::vector<std::string> args) {
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& arg = args[i];
    if (arg == "--" || arg.empty() || arg[0] != '-' || arg == "-") break;
    if (arg == "-np")
      arg = "--np";
    else if (arg.rfind("-np=", 0) == 0)
      arg = "-" + arg;
    std::string name = arg.substr(0, arg.find('='));
    bool attached = arg.find('=') != std::string::npos;
    if (name.size() > 2 && name[1] != '-') {  // "-xFOO=bar": short option with attached value
      name = name.substr(0, 2);
      attached = true;
    }
    const CLI::Option* opt = app.get_option_no_throw(name);
    if (opt == nullptr) continue;  // unknown: reported later, by name (a -np after it still rewritten)
    if (!attached && opt->get_items_expected_min() > 0) ++i;  // skip the option's value
  }
  return args;
}

}  // namespace

CommandLine parseCommandLine(const std::vector<std::string>& rawArgs) {
  CommandLine result;
  LaunchOptions& o = result.options;
  CLI::App app{kDescription, "tsrun"};
  app.prefix_command();
  app.get_formatter()->column_width(28);
  std::string quote = "auto";
  app.add_option("-n,--np", o.np, "Number of ranks (also -np N). Default: all slots of the hosts")
      ->check(CLI::Range(1, 1 << 20));  // Range, not PositiveNumber: its message prints 1.8e308
  auto* hostfile = app.add_option("--hostfile,--machinefile", o.hostfile, "Hostfile listing hosts and slots");
  app.add_option("-H,--host", o.hostList, "Host list: host1:4,host2:4 (bare host = 1 slot)")->excludes(hostfile);
  app.add_option("--rsh", o.rsh, "Remote start command template (words; '...' quoting allowed)")->capture_default_str();
  app.add_option("--rsh-quote", quote,
                 "Shell-quote the remote command words: auto (yes unless the agent is ip, "
                 "nsenter, env, sudo or chroot), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app.add_option("-x", o.exports,
                 "Export VAR=VALUE, or VAR with tsrun's current value, to every rank "
                 "(repeatable)")
      ->allow_extra_args(false);
  app.add_option("--timeout", o.timeoutSeconds,
                 "Kill the job and exit 124 when it runs longer than SECONDS (0 = never)")
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--grace", o.graceSeconds, "Seconds between SIGTERM and SIGKILL when stopping ranks")
      ->check(CLI::Range(0.0, 9.0))
      ->capture_default_str();
  app.add_flag("--dry-run", o.dryRun, "Print the rank plan and each rank's command and exit");
  app.add_flag("--elastic", o.elastic,
               "A rank that fails does not stop the others: the job ends when every rank has ended");
  app.add_option("--respawn", o.respawn,
                 "Implies --elastic; a rank that fails is started again, with TSR_JOIN=1, to join the "
                 "running job (tsr_comm_join), up to N times in all")
      ->check(CLI::Range(0, 1000));

  std::vector<std::string> args = normalizeArgs(app, rawArgs);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp&) {
    result.exitNow = true;
    result.output = app.help();
    return result;
  } catch (const CLI::ParseError& e) {
    result.exitNow = true;
    result.exitCode = kExitUsage;
    result.output = std::string("tsrun: ") + e.what() + "\nRun 'tsrun --help' for usage.\n";
    return result;
  } catch (const std::exception& e) {
    result.exitNow = true;
    result.exitCode = kExitUsage;
    result.output = std::string("tsrun: ") + e.what() + "\n";
    return result;
  }

  o.program = app.remaining();
  bool dashDash = !o.program.empty() && o.program.front() == "--";
  if (dashDash) o.program.erase(o.program.begin());
  auto fail = [&](const std::string& message) {
    result.exitNow = true;
    result.exitCode = kExitUsage;
    result.output = "tsrun: " + message + "\nRun 'tsrun --help' for usage.\n";
    return result;
  };
  // An empty path or host list given is a mistake (an unset shell variable), not "none given".
  for (const char* name : {"--hostfile", "-H"})
    if (app.count(name) > 0 && (name[1] == 'H' ? o.hostList.empty() : o.hostfile.empty()))
      return fail(std::string(name) + " is empty");
  // NaN passes CLI11's ranges (every comparison with it is false).
  if (std::isnan(o.timeoutSeconds)) return fail("--timeout nan: not a number of seconds");
  if (std::isnan(o.graceSeconds)) return fail("--grace nan: not a number of seconds");
  if (o.program.empty()) return fail("no program to run");
  const std::string& first = o.program.front();
  if (!dashDash && first.size() > 1 && first[0] == '-') {
    return fail("unknown option '" + first + "' (put '--' before a program named like this)");
  }
  if (o.np == 0 && o.hostfile.empty() && o.hostList.empty()) {
    return fail("-np N is required when no --hostfile or -H is given");
  }
  o.rshQuote = quote == "always" ? RshQuote::kAlways : quote == "never" ? RshQuote::kNever : RshQuote::kAuto;
  return result;
}

}  // namespace tsr::tools::tsrun
