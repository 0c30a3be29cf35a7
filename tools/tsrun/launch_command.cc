#include "tools/tsrun/launch_command.h"

#include <algorithm>
#include <cctype>

namespace tsr::tools::tsrun {
namespace {

bool validVariableName(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

constexpr const char* kSecretVariable = "TSR_JOB_SECRET";

// Run by the remote host's sh: `read` is a builtin, so the secret reaches the rank's
// environment without appearing on any command line; the rank's stdin is then at its end.
constexpr const char* kReadSecretScript =
    "IFS= read -r TSR_JOB_SECRET || { echo \"tsrun: no job secret on standard input (the --rsh "
    "agent must pass its standard input on)\" >&2; exit 1; }; export TSR_JOB_SECRET; exec \"$@\"";

std::string baseName(std::string_view path) {
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace

const std::vector<std::string>& launcherVariableNames() {
  static const std::vector<std::string> kNames = {"TSR_RANK",       "TSR_WORLD_SIZE",    "TSR_LOCAL_RANK",
                                                  "TSR_LOCAL_SIZE", "TSR_PEERS",         "TSR_JOB_SECRET",
                                                  "TSR_JOB_ID",     "TSR_LAUNCHER_WATCH"};
  return kNames;
}

const std::vector<std::string>& torchrunVariableNames() {
  static const std::vector<std::string> kNames = {"RANK",        "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                                  "MASTER_ADDR", "MASTER_PORT"};
  return kNames;
}

void setRendezvousAddress(JobInfo& job, const std::vector<RankSlot>& plan, int basePort, int freeLocalPort) {
  if (plan.empty()) return;
  const RankSlot& first = plan.front();
  job.masterAddr = first.peerHost;
  job.masterPort = first.local ? freeLocalPort : basePort + first.localSize;
}

Result<std::vector<std::string>> splitCommandTemplate(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool inWord = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote == '\'') {
      if (c == '\'')
        quote = 0;
      else
        word += c;
      continue;
    }
    if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < text.size() &&
                 (text[i + 1] == '"' || text[i + 1] == '\\' || text[i + 1] == '$')) {
        word += text[++i];
      } else {
        word += c;
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n') {
      if (inWord) words.push_back(std::move(word));
      word.clear();
      inWord = false;
    } else if (c == '\'' || c == '"') {
      quote = c;
      inWord = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      inWord = true;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote != 0) {
    return Status(Code::kInvalidArgument, "--rsh '" + std::string(text) + "': unterminated " + quote + " quote");
  }
  if (inWord) words.push_back(std::move(word));
  if (words.empty()) {
    return Status(Code::kInvalidArgument, "--rsh '" + std::string(text) + "': empty command");
  }
  return words;
}

std::string shellQuote(std::string_view word) {
  bool safe = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_-./:=,@%+").find(c) != std::string_view::npos;
  });
  if (safe) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  out += '\'';
  return out;
}

bool rshNeedsQuoting(const std::vector<std::string>& rshWords, RshQuote mode) {
  if (mode == RshQuote::kAlways) return true;
  if (mode == RshQuote::kNever) return false;
  if (rshWords.empty()) return true;
  static const std::vector<std::string> kDirectExec = {"ip", "nsenter", "env", "sudo", "chroot"};
  std::string program = baseName(rshWords.front());
  return std::find(kDirectExec.begin(), kDirectExec.end(), program) == kDirectExec.end();
}

Result<std::vector<EnvVar>> resolveExports(
    const std::vector<std::string>& specs,
    const std::function<std::optional<std::string>(const std::string&)>& lookup) {
  std::vector<EnvVar> out;
  const auto& reserved = launcherVariableNames();
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    EnvVar var;
    var.name = spec.substr(0, eq);
    if (!validVariableName(var.name)) {
      return Status(Code::kInvalidArgument, "-x '" + spec + "': '" + var.name + "' is not a valid variable name");
    }
    if (std::find(reserved.begin(), reserved.end(), var.name) != reserved.end()) {
      return Status(Code::kInvalidArgument, "-x '" + spec + "': " + var.name + " is set by tsrun for each rank");
    }
    if (eq != std::string::npos) {
      var.value = spec.substr(eq + 1);
    } else {
      std::optional<std::string> value = lookup(var.name);
      if (!value) {
        return Status(Code::kInvalidArgument, "-x " + var.name + ": " + var.name +
                                                  " is not set in tsrun's environment (use -x " + var.name + "=VALUE)");
      }
      var.value = *value;
    }
    // A later -x of the same name wins, like a later assignment in a shell.
    auto same = std::find_if(out.begin(), out.end(), [&](const EnvVar& v) { return v.name == var.name; });
    if (same != out.end())
      *same = std::move(var);
    else
      out.push_back(std::move(var));
  }
  return out;
}

std::vector<EnvVar> rankEnvironment(const RankSlot& slot, const JobInfo& job, const std::vector<EnvVar>& exports) {
  std::vector<EnvVar> env = {
      {"TSR_RANK", std::to_string(slot.rank)},
      {"TSR_WORLD_SIZE", std::to_string(job.worldSize)},
      {"TSR_LOCAL_RANK", std::to_string(slot.localRank)},
      {"TSR_LOCAL_SIZE", std::to_string(slot.localSize)},
      {"TSR_PEERS", job.peers},
      {"TSR_JOB_SECRET", job.secret},
      {"TSR_JOB_ID", job.jobId},
      {"TSR_LAUNCHER_WATCH", job.graceSeconds},
  };
  std::vector<EnvVar> torchrun = {{"RANK", std::to_string(slot.rank)},
                                  {"WORLD_SIZE", std::to_string(job.worldSize)},
                                  {"LOCAL_RANK", std::to_string(slot.localRank)},
                                  {"LOCAL_WORLD_SIZE", std::to_string(slot.localSize)}};
  if (!job.masterAddr.empty()) {
    torchrun.push_back({"MASTER_ADDR", job.masterAddr});
    torchrun.push_back({"MASTER_PORT", std::to_string(job.masterPort)});
  }
  if (job.oneOmpThread && slot.localSize > 1) torchrun.push_back({"OMP_NUM_THREADS", "1"});
  for (EnvVar& var : torchrun) {
    bool exported = std::any_of(exports.begin(), exports.end(), [&](const EnvVar& e) { return e.name == var.name; });
    if (!exported) env.push_back(std::move(var));
  }
  env.insert(env.end(), exports.begin(), exports.end());
  return env;
}

std::vector<std::string> mergeEnvironment(const std::vector<std::string>& base, const std::vector<EnvVar>& overrides) {
  std::vector<std::string> out;
  out.reserve(base.size() + overrides.size());
  for (const std::string& entry : base) {
    std::string_view name = std::string_view(entry).substr(0, entry.find('='));
    bool replaced = std::any_of(overrides.begin(), overrides.end(), [&](const EnvVar& v) { return v.name == name; });
    if (!replaced) out.push_back(entry);
  }
  for (const EnvVar& v : overrides) out.push_back(v.name + "=" + v.value);
  return out;
}

std::vector<std::string> remoteArgv(const std::vector<std::string>& rshWords, const std::string& host,
                                    const std::vector<EnvVar>& env, const std::vector<std::string>& program,
                                    bool quote) {
  std::vector<std::string> argv = rshWords;
  argv.push_back(host);
  auto add = [&](const std::string& word) { argv.push_back(quote ? shellQuote(word) : word); };
  for (const char* word : {"sh", "-c", kReadSecretScript, "tsrun-rank", "env"}) add(word);
  for (const EnvVar& v : env)
    if (v.name != kSecretVariable) add(v.name + "=" + v.value);
  for (const std::string& word : program) add(word);
  return argv;
}

std::string remoteInput(const JobInfo& job) { return job.secret + "\n"; }

std::vector<std::string> withoutVariable(const std::vector<std::string>& base, const std::string& name) {
  std::vector<std::string> out;
  for (const std::string& entry : base)
    if (entry.compare(0, name.size() + 1, name + "=") != 0) out.push_back(entry);
  return out;
}

}  // namespace tsr::tools::tsrun
