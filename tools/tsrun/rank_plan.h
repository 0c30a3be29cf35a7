// Rank plan: which host runs which rank, its local rank and its bootstrap address. Pure.
//
// Vocabulary: ranks 0..np-1 fill the hosts' slots in hostfile order (mpirun --map-by slot):
// host A with 2 slots gets ranks 0,1, host B the next ones, and so on. The *local rank* counts
// ranks on one machine; every local host name (localhost, 127.x.x.x, this machine's names) is
// the same machine, so they share one local-rank space (topology/local_host.h: tsr-topo draws a
// job's hosts by the same rule). A rank's *bootstrap address*
// (host:port in TSR_PEERS) is where it listens for its peers:
//   - local ranks: a free port picked by the launcher (assignLocalPorts), advertised as
//     127.0.0.1 when the whole job is local, or as this machine's host name when some ranks
//     are remote (127.0.0.1 would not reach it from there);
//   - remote ranks: basePort + local rank, advertised with the host name as written.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "topology/hostfile.h"
#include "topology/local_host.h"

namespace tsr::tools::tsrun {

using topology::HostEntry;

constexpr int kDefaultBasePort = 29400;

struct RankSlot {
  int rank = 0;
  std::string host;      // host name as written in the hostfile / -H
  bool local = false;    // spawned directly (true) or through the rsh agent (false)
  int localRank = 0;     // index among the ranks on the same machine
  int localSize = 0;     // number of ranks on the same machine
  std::string peerHost;  // host part of this rank's TSR_PEERS entry
  int port = 0;          // bootstrap port; 0 until assignLocalPorts for local ranks

  bool operator==(const RankSlot&) const = default;
};

struct PlanOptions {
  int np = 0;
  int basePort = kDefaultBasePort;
  // Names of this machine (hostname, FQDN); localhost and 127.x.x.x are always local.
  std::vector<std::string> localNames;
  // Advertised for local ranks when the job also has remote ranks (usually the hostname).
  std::string localAddress;
  // Where the hosts came from ("hosts.txt", "-H a:2,b:2"), for error messages.
  std::string source;
};

// True for localhost, 127.x.x.x, ::1 and any name in localNames (shared with tsr-topo).
using topology::isLocalHost;

// Maps np ranks onto the hosts' slots. Fails when np < 1 or np exceeds the total slots.
Result<std::vector<RankSlot>> buildRankPlan(const std::vector<HostEntry>& hosts, const PlanOptions& options);

// Number of ranks that run on this machine (how many free ports to pick).
int countLocalRanks(const std::vector<RankSlot>& plan);

// Gives the local ranks, in rank order, the ports picked for them (ports.size() must equal
// countLocalRanks(plan), and the ports must be distinct and in 1..65535).
Status assignLocalPorts(std::vector<RankSlot>& plan, const std::vector<int>& ports);

// The TSR_PEERS value: "host:port" of every rank, comma-separated, in rank order.
std::string peersString(const std::vector<RankSlot>& plan);

}  // namespace tsr::tools::tsrun
