// The alpha-beta cost model that picks a dense algorithm per (collective, size, job); it ranks
// the planned algorithms of the dense table (dense_algorithms.h; a test holds the two equal).
//
// Two link classes: `host` (ranks on one machine: UCX shared memory) and `net` (across
// machines). A message of b bytes over a link costs latency + b / bandwidth. Where several
// ranks of one host send across the network at once (the torus's columns, Rabenseifner's
// cross-host steps), they share the host's NICs: with `netNics` NICs of the net bandwidth each
// (hosts of GPUs with a NIC per GPU), F flows each get bandwidth * min(1, netNics / F). The
// ring is ordered host after host (topology/host_map.h), so only one flow per host crosses,
// at one NIC's rate.
// Estimates only need to rank the algorithms, not predict times; the figures that justify
// them are in docs/performance.md.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace tsr::algorithms {

struct LinkCost {
  double latencySec = 0;
  double bytesPerSec = 0;
};

struct LinkModel {
  // Defaults, used for a class that was neither configured nor probed: UCX shared memory on a
  // small server, and a 10 Gbit/s Ethernet link through a kernel TCP stack.
  LinkCost host{3e-6, 4e9};
  LinkCost net{40e-6, 1.25e9};
  int netNics = 1;  // per host, each at net.bytesPerSec
};

struct JobShape {
  int size = 1;           // ranks
  int hosts = 1;          // machines
  int ranksPerHost = 1;   // the most ranks on one machine
  bool hostGrid = false;  // hosts x local ranks form a grid (equal hosts, >= 2 each): torus, hier
};

struct Candidate {
  std::string algorithm;
  double seconds = 0;
};

// Allreduce of `bytes`: ring, rabenseifner, doubling, and with a host grid torus and hier;
// cheapest first (stable: on a tie the earlier listed, the ring, wins).
std::vector<Candidate> rankAllreduce(size_t bytes, const JobShape& job, const LinkModel& links);
// All-gather with `bytesPerRank` from each rank: ring and bruck, cheapest first.
std::vector<Candidate> rankAllgather(size_t bytesPerRank, const JobShape& job, const LinkModel& links);

// TSR_LINK_BW / TSR_LINK_LAT values: "VALUE" (both classes) or "host=VALUE,net=VALUE" (either
// may be left out). Bandwidth: bytes/s, or with a unit kbit|mbit|gbit (bits/s) or kb|mb|gb
// (bytes/s), decimal, any case ("1gbit", "12.5GB"). Latency: microseconds, or with us|ms|s.
// `given` says which classes the value set. Errors name the variable and the bad part.
struct LinkSpec {
  bool hostGiven = false, netGiven = false;
};
Result<LinkSpec> applyLinkBandwidth(const std::string& value, LinkModel& links);
Result<LinkSpec> applyLinkLatency(const std::string& value, LinkModel& links);

std::string describe(const LinkModel& links);

}  // namespace tsr::algorithms
