// Who am I in this job: rank, size, local rank, and every rank's bootstrap address, read from
// whatever launched the process.
//
// Sources, first match wins: tsrun (TSR_RANK...), Open MPI (OMPI_COMM_WORLD_*), torchrun
// (RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE), Slurm (SLURM_PROCID...), else a one-rank job.
// torchrun is checked before Slurm because it is the inner launcher when both are present
// (`srun torchrun ...`): its ranks are the real ones, Slurm's count nodes.
// Peers: TSR_PEERS (comma-separated host:port, one per rank in rank order) when set; otherwise
// Slurm's nodelist + tasks per node (block distribution) at port TSR_BASE_PORT + local rank;
// otherwise, when every rank is on this host, 127.0.0.1:(TSR_BASE_PORT + rank).
// Pure but for TSR_JOB_SECRET_FILE: the caller passes the environment as a map.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace tsr::runtime {

using EnvMap = std::map<std::string, std::string>;

constexpr uint16_t kDefaultBasePort = 29400;

struct PeerAddress {
  std::string host;
  uint16_t port = 0;
  std::string toString() const;  // "host:port", "[v6]:port" for IPv6 literals
};

struct LaunchInfo {
  int rank = 0;
  int size = 1;
  int localRank = 0;
  int localSize = 1;
  std::vector<PeerAddress> peers;  // one bootstrap address per rank, rank order
  std::string secret;              // HMAC key of the bootstrap (job_secret.h)
  bool insecure = false;           // TSR_INSECURE=1: an empty secret is allowed (logged loudly)
  std::string jobId;
  std::string source;  // "tsrun", "ompi", "slurm", "torchrun", "default"
};

// Reads the launch description from an environment snapshot (and the file TSR_JOB_SECRET_FILE
// names, if any). Errors name the variable and its value; a job of several ranks without a
// job secret is an error unless TSR_INSECURE=1 (job_secret.h).
Result<LaunchInfo> launchInfoFromEnv(const EnvMap& env);

// Parses "host:port" or "[v6addr]:port"; `what` names the source in errors (e.g. "TSR_PEERS entry 2").
Result<PeerAddress> parsePeerAddress(const std::string& text, const std::string& what);

// Parses TSR_PEERS: comma-separated host:port entries.
Result<std::vector<PeerAddress>> parsePeerList(const std::string& text);

}  // namespace tsr::runtime
