#include "runtime/bootstrap/launch_env.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <tuple>

#include "runtime/bootstrap/job_secret.h"
#include "runtime/bootstrap/slurm_nodelist.h"

namespace tsr::runtime {

namespace {

constexpr long long kMaxRanks = 1 << 20;

Status invalid(std::string message) { return Status(Code::kInvalidArgument, std::move(message)); }

const std::string* lookup(const EnvMap& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? nullptr : &it->second;
}

std::string quoted(const std::string& name, const std::string& value) { return name + "='" + value + "'"; }

Result<int> parseInt(const std::string& name, const std::string& value, long long min, long long max) {
  long long v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size())
    return invalid(quoted(name, value) + " is not an integer");
  if (v < min || v > max)
    return invalid(quoted(name, value) + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return static_cast<int>(v);
}

Result<int> requireInt(const EnvMap& env, const std::string& name, long long min, long long max,
                       const std::string& source) {
  const std::string* value = lookup(env, name);
  if (!value) return invalid(name + " is not set (needed for a " + source + " launch)");
  return parseInt(name, *value, min, max);
}

// The four numbers every source provides, with the variable names for error messages.
struct Counts {
  int rank, size, localRank, localSize;
  std::string rankVar, sizeVar, localRankVar, localSizeVar;
};

Result<Counts> readCounts(const EnvMap& env, const std::string& source, const char* rankVar, const char* sizeVar,
                          const char* localRankVar, const char* localSizeVar) {
  Counts c{0, 0, 0, 0, rankVar, sizeVar, localRankVar, localSizeVar};
  TSR_ASSIGN_OR_RETURN(c.size, requireInt(env, sizeVar, 1, kMaxRanks, source));
  TSR_ASSIGN_OR_RETURN(c.rank, requireInt(env, rankVar, 0, kMaxRanks - 1, source));
  TSR_ASSIGN_OR_RETURN(c.localSize, requireInt(env, localSizeVar, 1, kMaxRanks, source));
  TSR_ASSIGN_OR_RETURN(c.localRank, requireInt(env, localRankVar, 0, kMaxRanks - 1, source));
  return c;
}

Status validateCounts(const Counts& c) {
  auto is = [](const std::string& var, int v) { return var + "=" + std::to_string(v); };
  if (c.rank >= c.size) return invalid(is(c.rankVar, c.rank) + " is not below " + is(c.sizeVar, c.size));
  if (c.localSize > c.size) return invalid(is(c.localSizeVar, c.localSize) + " exceeds " + is(c.sizeVar, c.size));
  if (c.localRank >= c.localSize)
    return invalid(is(c.localRankVar, c.localRank) + " is not below " + is(c.localSizeVar, c.localSize));
  return Status::ok();
}

Result<int> basePort(const EnvMap& env) {
  const std::string* value = lookup(env, "TSR_BASE_PORT");
  if (!value) return static_cast<int>(kDefaultBasePort);
  return parseInt("TSR_BASE_PORT", *value, 1, 65535);
}

// Port base + offset for offsets [0, count): all must stay within 65535.
Status checkPortRoom(int base, int count) {
  if (base + count - 1 > 65535)
    return invalid("TSR_BASE_PORT=" + std::to_string(base) + " leaves no room for " + std::to_string(count) +
                   " ports (would need up to " + std::to_string(base + count - 1) + ")");
  return Status::ok();
}

// Slurm block distribution: ranks fill node 0 first, then node 1, ...
Result<std::vector<PeerAddress>> slurmPeers(const std::vector<std::string>& hosts, const std::vector<int>& counts,
                                            int base) {
  std::vector<PeerAddress> peers;
  for (size_t n = 0; n < hosts.size(); ++n) {
    TSR_RETURN_IF_ERROR(checkPortRoom(base, counts[n]));
    for (int l = 0; l < counts[n]; ++l) peers.push_back({hosts[n], static_cast<uint16_t>(base + l)});
  }
  return peers;
}

// No two ranks at one address; sorted, so a million ranks take a moment, not hours.
Status checkDistinct(const std::vector<PeerAddress>& peers) {
  std::vector<size_t> order(peers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(peers[a].host, peers[a].port, a) < std::tie(peers[b].host, peers[b].port, b);
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const PeerAddress& a = peers[order[k - 1]];
    const PeerAddress& b = peers[order[k]];
    if (a.host == b.host && a.port == b.port)
      return invalid("TSR_PEERS gives ranks " + std::to_string(order[k - 1]) + " and " + std::to_string(order[k]) +
                     " the same address " + b.toString());
  }
  return Status::ok();
}

// TSR_PEERS when set, else the derived list, else all-local, else an error saying what to set.
Result<std::vector<PeerAddress>> choosePeers(const EnvMap& env, const Counts& c, const std::string& source,
                                             std::optional<std::vector<PeerAddress>> derived,
                                             const std::string& whyNotDerived) {
  std::vector<PeerAddress> peers;
  if (const std::string* text = lookup(env, "TSR_PEERS")) {
    TSR_ASSIGN_OR_RETURN(peers, parsePeerList(*text));
    if (static_cast<int>(peers.size()) != c.size)
      return invalid("TSR_PEERS lists " + std::to_string(peers.size()) + " addresses but the world size is " +
                     c.sizeVar + "=" + std::to_string(c.size));
  } else if (derived) {
    peers = std::move(*derived);
  } else if (c.localSize == c.size) {
    TSR_ASSIGN_OR_RETURN(int base, basePort(env));
    TSR_RETURN_IF_ERROR(checkPortRoom(base, c.size));
    for (int r = 0; r < c.size; ++r) peers.push_back({"127.0.0.1", static_cast<uint16_t>(base + r)});
  } else {
    return invalid("TSR_PEERS is needed: a " + source + " job over several hosts (" + c.localSizeVar + "=" +
                   std::to_string(c.localSize) + " of " + c.sizeVar + "=" + std::to_string(c.size) +
                   ") gives no bootstrap addresses" + (whyNotDerived.empty() ? "" : " (" + whyNotDerived + ")") +
                   "; set TSR_PEERS to comma-separated host:port, one per rank in rank order");
  }
  TSR_RETURN_IF_ERROR(checkDistinct(peers));
  return peers;
}

std::string firstOf(const EnvMap& env, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (const std::string* v = lookup(env, n)) return *v;
  return "";
}

Result<LaunchInfo> makeInfo(const Counts& c, std::vector<PeerAddress> peers, const EnvMap& env, std::string jobId,
                            std::string source) {
  TSR_ASSIGN_OR_RETURN(JobSecret secret, jobSecretFromEnv(env, c.size));
  LaunchInfo info;
  info.rank = c.rank;
  info.size = c.size;
  info.localRank = c.localRank;
  info.localSize = c.localSize;
  info.peers = std::move(peers);
  info.secret = std::move(secret.secret);
  info.insecure = secret.insecure;
  std::string tsrJob = firstOf(env, {"TSR_JOB_ID"});
  info.jobId = tsrJob.empty() ? std::move(jobId) : tsrJob;
  info.source = std::move(source);
  return info;
}

Result<LaunchInfo> fromTsrun(const EnvMap& env) {
  Counts c{0, 0, 0, 0, "TSR_RANK", "TSR_WORLD_SIZE", "TSR_LOCAL_RANK", "TSR_LOCAL_SIZE"};
  TSR_ASSIGN_OR_RETURN(c.size, requireInt(env, c.sizeVar, 1, kMaxRanks, "tsrun"));
  TSR_ASSIGN_OR_RETURN(c.rank, requireInt(env, c.rankVar, 0, kMaxRanks - 1, "tsrun"));
  bool haveLocal = lookup(env, c.localRankVar) || lookup(env, c.localSizeVar);
  if (haveLocal || !lookup(env, "TSR_PEERS")) {
    TSR_ASSIGN_OR_RETURN(c.localSize, requireInt(env, c.localSizeVar, 1, kMaxRanks, "tsrun"));
    TSR_ASSIGN_OR_RETURN(c.localRank, requireInt(env, c.localRankVar, 0, kMaxRanks - 1, "tsrun"));
  } else {
    c.localSize = c.size;  // provisional until the peers' hosts say otherwise
    c.localRank = c.rank;
  }
  if (c.rank >= c.size)
    return invalid("TSR_RANK=" + std::to_string(c.rank) + " is not below TSR_WORLD_SIZE=" + std::to_string(c.size));
  TSR_ASSIGN_OR_RETURN(auto peers, choosePeers(env, c, "tsrun", std::nullopt, ""));
  if (!haveLocal) {  // local rank/size from the ranks that share this rank's host
    c.localSize = c.localRank = 0;
    for (int r = 0; r < c.size; ++r) {
      if (peers[r].host != peers[c.rank].host) continue;
      if (r < c.rank) ++c.localRank;
      ++c.localSize;
    }
  }
  TSR_RETURN_IF_ERROR(validateCounts(c));
  return makeInfo(c, std::move(peers), env, "", "tsrun");
}

Result<LaunchInfo> fromOmpi(const EnvMap& env) {
  TSR_ASSIGN_OR_RETURN(Counts c, readCounts(env, "Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                            "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"));
  TSR_RETURN_IF_ERROR(validateCounts(c));
  TSR_ASSIGN_OR_RETURN(auto peers, choosePeers(env, c, "Open MPI", std::nullopt, ""));
  std::string job = firstOf(env, {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid"});
  return makeInfo(c, std::move(peers), env, job, "ompi");
}

Result<LaunchInfo> fromTorchrun(const EnvMap& env) {
  TSR_ASSIGN_OR_RETURN(Counts c, readCounts(env, "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"));
  TSR_RETURN_IF_ERROR(validateCounts(c));
  TSR_ASSIGN_OR_RETURN(auto peers, choosePeers(env, c, "torchrun", std::nullopt, ""));
  return makeInfo(c, std::move(peers), env, firstOf(env, {"TORCHELASTIC_RUN_ID"}), "torchrun");
}

Result<LaunchInfo> fromSlurm(const EnvMap& env) {
  Counts c{0, 0, 0, 0, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_TASKS_PER_NODE"};
  if (!lookup(env, "SLURM_NTASKS") && lookup(env, "SLURM_NPROCS")) c.sizeVar = "SLURM_NPROCS";
  TSR_ASSIGN_OR_RETURN(c.size, requireInt(env, c.sizeVar, 1, kMaxRanks, "Slurm"));
  TSR_ASSIGN_OR_RETURN(c.rank, requireInt(env, c.rankVar, 0, kMaxRanks - 1, "Slurm"));
  TSR_ASSIGN_OR_RETURN(c.localRank, requireInt(env, c.localRankVar, 0, kMaxRanks - 1, "Slurm"));
  // A job step's own lists are more precise than the allocation's when srun sets both.
  std::string tpnVar = lookup(env, "SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
  std::string nodesVar = lookup(env, "SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
  c.localSizeVar = tpnVar;
  const std::string* tpnText = lookup(env, tpnVar);
  if (!tpnText) return invalid(tpnVar + " is not set (needed for a Slurm launch)");
  TSR_ASSIGN_OR_RETURN(auto counts, expandTasksPerNode(*tpnText));
  long long total = 0;
  for (int n : counts) total += n;
  if (total != c.size)
    return invalid(quoted(tpnVar, *tpnText) + " adds up to " + std::to_string(total) + " tasks but " + c.sizeVar + "=" +
                   std::to_string(c.size));
  // Which node this rank is on: SLURM_NODEID when given, else the block layout's answer.
  std::vector<int> firstRank(counts.size());
  int blockNode = 0;
  for (size_t n = 0, acc = 0; n < counts.size(); acc += counts[n], ++n) {
    firstRank[n] = static_cast<int>(acc);
    if (c.rank >= static_cast<int>(acc)) blockNode = static_cast<int>(n);
  }
  int node = blockNode;
  if (const std::string* id = lookup(env, "SLURM_NODEID")) {
    TSR_ASSIGN_OR_RETURN(node, parseInt("SLURM_NODEID", *id, 0, static_cast<long long>(counts.size()) - 1));
  }
  c.localSize = counts[node];
  TSR_RETURN_IF_ERROR(validateCounts(c));

  std::optional<std::vector<PeerAddress>> derived;
  std::string whyNot;
  const std::string* nodesText = lookup(env, nodesVar);
  const std::string* dist = lookup(env, "SLURM_DISTRIBUTION");
  if (!lookup(env, "TSR_PEERS")) {
    if (!nodesText) {
      whyNot = nodesVar + " is not set";
    } else if (dist && dist->rfind("block", 0) != 0) {
      whyNot = quoted("SLURM_DISTRIBUTION", *dist) + " is not block";
    } else if (node != blockNode || c.rank - firstRank[node] != c.localRank) {
      whyNot = "SLURM_PROCID=" + std::to_string(c.rank) + " with SLURM_LOCALID=" + std::to_string(c.localRank) +
               " is not a block distribution";
    } else {
      TSR_ASSIGN_OR_RETURN(auto hosts, expandNodelist(*nodesText));
      if (hosts.size() != counts.size())
        return invalid(quoted(nodesVar, *nodesText) + " names " + std::to_string(hosts.size()) + " nodes but " +
                       quoted(tpnVar, *tpnText) + " describes " + std::to_string(counts.size()));
      TSR_ASSIGN_OR_RETURN(int base, basePort(env));
      TSR_ASSIGN_OR_RETURN(derived, slurmPeers(hosts, counts, base));
    }
  }
  TSR_ASSIGN_OR_RETURN(auto peers, choosePeers(env, c, "Slurm", std::move(derived), whyNot));
  std::string job = firstOf(env, {"SLURM_JOB_ID", "SLURM_JOBID"});
  if (const std::string* step = lookup(env, "SLURM_STEP_ID")) job += "." + *step;
  return makeInfo(c, std::move(peers), env, job, "slurm");
}

Result<LaunchInfo> singleRank(const EnvMap& env) {
  Counts c{0, 1, 0, 1, "rank", "world size", "local rank", "local size"};
  std::vector<PeerAddress> peers;
  if (const std::string* text = lookup(env, "TSR_PEERS")) {
    TSR_ASSIGN_OR_RETURN(peers, parsePeerList(*text));
    if (peers.size() != 1)
      return invalid("TSR_PEERS lists " + std::to_string(peers.size()) +
                     " addresses but no launcher variable (TSR_RANK, OMPI_COMM_WORLD_RANK, "
                     "RANK, SLURM_PROCID) says which rank this process is");
  } else {
    TSR_ASSIGN_OR_RETURN(int base, basePort(env));
    peers.push_back({"127.0.0.1", static_cast<uint16_t>(base)});
  }
  return makeInfo(c, std::move(peers), env, "", "default");
}

}  // namespace

std::string PeerAddress::toString() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

Result<PeerAddress> parsePeerAddress(const std::string& text, const std::string& what) {
  auto bad = [&](const std::string& why) { return invalid(what + " ('" + text + "') " + why); };
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return bad("is not [address]:port");
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) return bad("is not host:port");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string::npos) return bad("looks like an IPv6 address: write it as [address]:port");
  }
  if (host.empty()) return bad("has an empty host");
  for (char ch : host)
    if (ch == ' ' || ch == '\t' || ch == ',' || ch == '/') return bad("has a bad host name");
  auto portValue = parseInt("port", port, 1, 65535);
  if (!portValue.isOk()) return bad("has a bad port '" + port + "' (need 1-65535)");
  return PeerAddress{host, static_cast<uint16_t>(portValue.value())};
}

Result<std::vector<PeerAddress>> parsePeerList(const std::string& text) {
  if (text.empty()) return invalid("TSR_PEERS is set but empty");
  std::vector<PeerAddress> peers;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string entry = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t b = entry.find_first_not_of(" \t"), e = entry.find_last_not_of(" \t");
    entry = b == std::string::npos ? "" : entry.substr(b, e - b + 1);
    std::string what = "TSR_PEERS entry for rank " + std::to_string(peers.size());
    TSR_ASSIGN_OR_RETURN(auto peer, parsePeerAddress(entry, what));
    peers.push_back(std::move(peer));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return peers;
}

Result<LaunchInfo> launchInfoFromEnv(const EnvMap& env) {
  if (lookup(env, "TSR_RANK") || lookup(env, "TSR_WORLD_SIZE")) return fromTsrun(env);
  if (lookup(env, "OMPI_COMM_WORLD_RANK") || lookup(env, "OMPI_COMM_WORLD_SIZE")) return fromOmpi(env);
  if (lookup(env, "RANK") && lookup(env, "WORLD_SIZE")) return fromTorchrun(env);
  if (lookup(env, "SLURM_PROCID")) return fromSlurm(env);
  return singleRank(env);
}

}  // namespace tsr::runtime
