#include "runtime/config.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "algorithms/dense/cost_model.h"
#include "algorithms/dense/dense_algorithms.h"

extern char** environ;

namespace tsr::runtime {

namespace {

std::string canonical(const std::string& name) {
  std::string s;
  for (char c : name) s += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (s.rfind("TSR_", 0) != 0) s = "TSR_" + s;
  return s;
}

const ConfigEntry* find(const std::string& name) {
  for (const auto& e : configTable())
    if (name == e.name) return &e;
  return nullptr;
}

size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

Status validate(const ConfigEntry& e, const std::string& value) {
  if (e.kind == ValueKind::kInt) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(value.c_str(), &end, 10);
    long long lo = 0, hi = 0;
    std::sscanf(e.accepted, "%lld..%lld", &lo, &hi);
    if (value.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi)
      return Status(Code::kInvalidArgument,
                    std::string(e.name) + "=" + value + ": expected an integer in " + e.accepted);
  } else if (e.kind == ValueKind::kEnum) {
    if (value.empty() && !*e.defaultValue) return Status::ok();  // unset: a default of none
    std::string accepted = std::string("|") + e.accepted + "|";
    if (accepted.find("|" + value + "|") == std::string::npos)
      return Status(Code::kInvalidArgument, std::string(e.name) + "=" + value + ": accepted values are " + e.accepted);
  }
  // Strings with a grammar of their own: checked here, where tsr-info -s sees them, with the
  // parser the communicator uses later.
  const std::string name = e.name;
  if ((name == "TSR_LINK_BW" || name == "TSR_LINK_LAT") && !value.empty()) {
    algorithms::LinkModel scratch;
    auto parsed = name == "TSR_LINK_BW" ? algorithms::applyLinkBandwidth(value, scratch)
                                        : algorithms::applyLinkLatency(value, scratch);
    if (!parsed.isOk()) {
      const std::string& why = parsed.status().message();  // it names the variable, or is told to
      return Status(Code::kInvalidArgument, why.rfind(name, 0) == 0 ? why : name + "=" + value + ": " + why);
    }
  } else if (name == "TSR_BASE_PORT") {
    char* end = nullptr;
    const long port = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || port < 1 || port > 65535)
      return Status(Code::kInvalidArgument, name + "=" + value + ": expected " + e.accepted);
  }
  return Status::ok();
}

// Names other parts of Tessera read directly from the environment map (launch, compression).
bool isFamilyName(const std::string& name) { return name.rfind("TSR_COMPRESS_", 0) == 0; }

}  // namespace

const std::vector<ConfigEntry>& configTable() {
  static const std::string algoChoices = algorithms::denseAlgorithmChoices();  // TSR_ALGO's values
  static const std::vector<ConfigEntry> table = {
      {"TSR_TIMEOUT_MS", ValueKind::kInt, "300000", "1..86400000",
       "a pending collective fails with TSR_ERR_TIMEOUT after this long"},
      {"TSR_BOOTSTRAP_TIMEOUT_MS", ValueKind::kInt, "60000", "1..86400000",
       "how long bootstrap retries peers that are not up yet"},
      {"TSR_LOG_LEVEL", ValueKind::kEnum, "warn", "off|error|warn|info|debug|trace", "log level"},
      {"TSR_LOG_FILE", ValueKind::kString, "", "", "log file; %r = rank, %h = host (default stderr)"},
      {"TSR_CHUNK_BYTES", ValueKind::kInt, "524288", "1024..1073741824",
       "pipelining chunk of ring and tree collectives"},
      {"TSR_WINDOW", ValueKind::kInt, "4", "1..64", "receive-and-reduce chunks in flight per rank"},
      {"TSR_MIN_MESSAGE_BYTES", ValueKind::kInt, "65536", "1..1073741824",
       "Rabenseifner, doubling and Bruck send a step's consecutive blocks as one message until it "
       "reaches this size (or TSR_CHUNK_BYTES, the smaller)"},
      {"TSR_SECURE", ValueKind::kEnum, "off", "off|encrypt",
       "encrypt: seal every message between hosts with AES-256-GCM under per-link keys (a "
       "tampered or replayed message fails the collective naming the peer)"},
      {"TSR_ARRIVAL_REDUCE", ValueKind::kEnum, "auto", "auto|on|off",
       "ring reduce-scatter chunks are reduced straight from UCX's receive buffer (UCX active "
       "messages; no staging copy, no window): on, off, or auto = on when no two ranks share a "
       "host; must be the same on every rank"},
      {"TSR_ALGO", ValueKind::kEnum, "auto", algoChoices.c_str(),
       "force an algorithm: allreduce ring, torus, hier (two-level), rabenseifner, doubling or shm "
       "(1 B..4 KiB through shared memory, every rank on one host); all-gather "
       "ring or bruck; a collective the name does not fit, or a job it cannot serve, takes the "
       "cost model's choice; auto = the cost model for everything"},
      {"TSR_BIND", ValueKind::kEnum, "numa", "none|numa|core",
       "bind each rank to the cores of the NUMA node nearest its GPU/NIC (numa), to a slice of them (core), or not"},
      {"TSR_TOPO_FILE", ValueKind::kString, "", "", "hwloc XML to use instead of discovery"},
      {"TSR_TOPO_DUMP_FILE", ValueKind::kString, "", "", "write the discovered topology here"},
      {"TSR_LINK_BW", ValueKind::kString, "", "",
       "cost model bandwidth: VALUE or host=VALUE,net=VALUE (bytes/s, or 10gbit, 1.25GB, ...); "
       "a class left out is probed"},
      {"TSR_LINK_LAT", ValueKind::kString, "", "",
       "cost model latency: VALUE or host=VALUE,net=VALUE (microseconds, or 50us, 1ms); a class "
       "left out is probed"},
      {"TSR_LINK_NICS", ValueKind::kInt, "1", "1..4096",
       "cost model: NICs per host, each at the net bandwidth, that the host's cross-host flows spread over "
       "(hosts of GPUs with a NIC each: their number); the probe measures one flow, one NIC"},
      {"TSR_TEST_HOST_ID", ValueKind::kString, "", "",
       "tests only: appended to this rank's host identity, so ranks on one machine with different values act as "
       "different hosts"},
      {"TSR_ERR_MODE", ValueKind::kEnum, "auto", "auto|peer",
       "UCX error handling: peer = UCX peer failure mode on every endpoint (same-host traffic then "
       "goes over TCP loopback); auto = shared memory to same-host peers"},
      {"TSR_SPIN_US", ValueKind::kInt, "50", "0..1000000",
       "how long the progress thread (and, with TSR_WAIT=sleep, a waiting caller) polls before "
       "it sleeps on the event fd"},
      {"TSR_WAIT", ValueKind::kEnum, "auto", "auto|spin|sleep",
       "how a rank waits for its peers during a collective: spin = poll, yielding the core; "
       "sleep = poll for TSR_SPIN_US, then sleep on the transport's events; auto = sleep when "
       "no other rank shares this host (every message then comes over the network and wakes it), "
       "else spin"},
      {"TSR_TORCH_STREAM_WAIT", ValueKind::kEnum, "1", "0|1",
       "torch backend, CUDA tensors: 1 = Work.wait() on a stream of the caller's own makes that stream wait "
       "(tsr_stream_hold) and returns at once, as ProcessGroupNCCL's (on a blocking stream, the default one "
       "included, it blocks); 0 = it "
       "blocks the calling thread until the result is on the device, as gloo's"},
      {"TSR_CALLER_PROGRESS", ValueKind::kEnum, "1", "0|1",
       "1: a thread blocked in wait drives the communicator itself (no hand-off to the progress "
       "thread); 0: only the progress thread drives"},
      // Set by tsrun (or derived from Open MPI / Slurm / torchrun); read by the bootstrap.
      {"TSR_RANK", ValueKind::kString, "", "", "this rank (set by tsrun)"},
      {"TSR_WORLD_SIZE", ValueKind::kString, "", "", "number of ranks (set by tsrun)"},
      {"TSR_LOCAL_RANK", ValueKind::kString, "", "", "rank on this host (set by tsrun)"},
      {"TSR_LOCAL_SIZE", ValueKind::kString, "", "", "ranks on this host (set by tsrun)"},
      {"TSR_PEERS", ValueKind::kString, "", "", "host:port bootstrap address of every rank"},
      {"TSR_JOB_SECRET", ValueKind::kString, "", "", "HMAC key of the bootstrap (set by tsrun)"},
      {"TSR_JOB_SECRET_FILE", ValueKind::kString, "", "",
       "file holding the job secret (mode 0600 or stricter) when TSR_JOB_SECRET is not set"},
      {"TSR_INSECURE", ValueKind::kEnum, "0", "0|1",
       "1: a job of several ranks may start without a job secret (unauthenticated bootstrap)"},
      {"TSR_JOB_ID", ValueKind::kString, "", "", "job identifier (set by tsrun)"},
      {"TSR_JOIN", ValueKind::kEnum, "0", "0|1",
       "1: this process replaces a failed rank and joins the running job (set by tsrun --respawn; "
       "tsr_comm_join)"},
      {"TSR_LAUNCHER_WATCH", ValueKind::kString, "", "seconds",
       "set by tsrun: standard input is its pipe; when it ends (tsrun gone, even by SIGKILL) the "
       "rank sends itself SIGTERM, then SIGKILL after this many seconds"},
      {"TSR_BASE_PORT", ValueKind::kString, "29400", "a port in 1..65535", "first bootstrap port when derived"},
      // Defaults of a compressed collective's parameters (algorithms/compress/registry.h). The
      // words are checked here, at every communicator's start (a preset or an explicit key that
      // overrides a misspelt one would otherwise leave it unseen); the numbers, whose ranges
      // depend on the tensor, when the compressor is built.
      {"TSR_COMPRESS_COMPRESSOR", ValueKind::kEnum, "", "onebit|topk|randomk|dithering|fp16|bf16|none",
       "compressor of a compressed collective that names none"},
      {"TSR_COMPRESS_K", ValueKind::kString, "", "a count, a ratio in (0, 1), or dithering levels",
       "topk/randomk: elements kept; dithering: number of levels"},
      {"TSR_COMPRESS_SCALING", ValueKind::kEnum, "false", "true|false|1|0", "onebit: scale by the mean |g|"},
      {"TSR_COMPRESS_SCALE_BLOCK", ValueKind::kString, "0", "0 or a multiple of 64",
       "onebit: elements per scale (0: one for the tensor)"},
      {"TSR_COMPRESS_DITHERING_PARTITION", ValueKind::kEnum, "linear", "linear|natural",
       "dithering: spacing of the levels"},
      {"TSR_COMPRESS_DITHERING_NORMALIZE", ValueKind::kEnum, "max", "max|l2", "dithering: norm the levels scale to"},
      {"TSR_COMPRESS_EF", ValueKind::kEnum, "vanilla", "vanilla|none", "error feedback around the compressor"},
      {"TSR_COMPRESS_MOMENTUM", ValueKind::kEnum, "none", "nesterov|none", "momentum around the compressor"},
      {"TSR_COMPRESS_MOMENTUM_MU", ValueKind::kString, "0.9", "a number in [0, 1)",
       "momentum=nesterov: the momentum factor"},
      {"TSR_COMPRESS_SEED", ValueKind::kString, "0", "an unsigned 64-bit integer",
       "seed of every random draw (randomk, dithering)"},
      // Set inside the emulated cluster's hosts (../shared/tools/netcluster.sh); informational.
      {"TSR_HOST", ValueKind::kString, "", "", "emulated host index (netcluster.sh)"},
      {"TSR_IFACE", ValueKind::kString, "", "", "emulated host's interface (netcluster.sh)"},
      {"TSR_ADDR", ValueKind::kString, "", "", "emulated host's address (netcluster.sh)"},
  };
  return table;
}

EnvMap processEnvironment() {
  // The job secret leaves the environment the first time it is seen, so programs this rank
  // starts do not inherit it. Later snapshots (a second communicator) get it from here.
  static std::mutex mutex;
  static std::optional<std::string> jobSecret;
  std::lock_guard<std::mutex> lock(mutex);
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto secret = env.find(kJobSecretVariable);
  if (secret != env.end()) {
    jobSecret = secret->second;
    unsetenv(kJobSecretVariable);
  } else if (jobSecret) {
    env[kJobSecretVariable] = *jobSecret;
  }
  return env;
}

Config::Config() {
  for (const auto& e : configTable()) values_[e.name] = e.defaultValue;
}

Result<Config> Config::fromEnvironment(const EnvMap& env) {
  Config config;
  for (const auto& [name, value] : env) {
    if (name.rfind("TSR_", 0) != 0) continue;
    if (!find(name)) {
      if (isFamilyName(name)) continue;
      std::string hint = closestConfigName(name);
      config.warnings_.push_back("unknown variable " + name + " is ignored" +
                                 (hint.empty() ? "" : " (did you mean " + hint + "?)"));
      continue;
    }
    TSR_RETURN_IF_ERROR(config.set(name, value));
  }
  return config;
}

Status Config::set(const std::string& name, const std::string& value) {
  std::string key = canonical(name);
  const ConfigEntry* e = find(key);
  if (!e) {
    std::string hint = closestConfigName(key);
    return Status(Code::kInvalidArgument,
                  "unknown setting " + name + (hint.empty() ? "" : " (did you mean " + hint + "?)"));
  }
  TSR_RETURN_IF_ERROR(validate(*e, value));
  values_[key] = value;
  given_.insert(key);
  return Status::ok();
}

bool Config::isSet(const std::string& name) const { return given_.count(canonical(name)) > 0; }

const std::string& Config::get(const std::string& name) const {
  static const std::string empty;
  auto it = values_.find(canonical(name));
  return it == values_.end() ? empty : it->second;
}

int64_t Config::getInt(const std::string& name) const { return std::strtoll(get(name).c_str(), nullptr, 10); }

Status applyInitParams(const InitParams& params, Config& config, EnvMap& env) {
  static const std::pair<const char*, const char*> kLaunchKeys[] = {{"rank", "TSR_RANK"},
                                                                    {"size", "TSR_WORLD_SIZE"},
                                                                    {"local_rank", "TSR_LOCAL_RANK"},
                                                                    {"local_size", "TSR_LOCAL_SIZE"},
                                                                    {"peers", "TSR_PEERS"},
                                                                    {"secret", kJobSecretVariable}};
  for (const auto& param : params) {
    const std::string& key = param.first;  // not a structured binding: clang's lambdas cannot capture one
    const std::string& value = param.second;
    auto launch =
        std::find_if(std::begin(kLaunchKeys), std::end(kLaunchKeys), [&key](const auto& k) { return key == k.first; });
    if (launch != std::end(kLaunchKeys)) {
      env[launch->second] = value;
      continue;
    }
    TSR_RETURN_IF_ERROR(config.set(key, value));
    env[canonical(key)] = value;
  }
  return Status::ok();
}

std::string closestConfigName(const std::string& name) {
  std::string best;
  size_t bestDistance = 4;  // farther than this is no suggestion
  for (const auto& e : configTable()) {
    size_t d = editDistance(name, e.name);
    if (d < bestDistance) {
      bestDistance = d;
      best = e.name;
    }
  }
  return best;
}

}  // namespace tsr::runtime
