// Platforms for tsr-sim, built in SimGrid's engine before a replay (platform.cc), or read from
// a SimGrid XML file.
//
//  * switch: one crossbar; each host has one full-duplex link (rate, latency / 2) to it, so a
//    message between two hosts costs `latency` + bytes / rate and a host's sends share its
//    outgoing direction only.
//  * fattree: two levels: leaves of `leafHosts` hosts, each leaf linked to `spines` spine
//    switches, every link full duplex at `rate` (SimGrid's fat tree: one rate for all levels);
//    spines < leafHosts oversubscribes the leaves. Each link has latency / 2, so hosts under one
//    leaf see `latency`, hosts under different leaves 2 * latency.
//  * xml: the file's hosts, sorted by name, carry the job's hosts in that order.
// With several ranks per host, ranks of one host talk over a loopback link (hostRate,
// hostLatency: UCX shared memory) and share the host's cores (one per rank).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace simgrid::s4u {
class Engine;
class Host;
}  // namespace simgrid::s4u

namespace tsr::sim {

struct PlatformSpec {
  std::string kind = "switch";  // switch | fattree | xml
  double rate = 1.25e9;         // bytes/s of each network link (default 10 Gbit/s)
  double latency = 20e-6;       // seconds, host to host through one switch
  double hostRate = 4e9;        // same-host rate and latency (cost_model.h's defaults)
  double hostLatency = 3e-6;
  int leafHosts = 8;  // fattree
  int spines = 0;     // fattree; 0 = leafHosts (non-blocking)
  std::string xmlFile;
};

// Checks the numbers; InvalidArgument naming the bad one.
Status validate(const PlatformSpec& spec);

// Creates `hosts` hosts with `coresPerHost` cores each in `engine`, returned in job host order.
// A fat tree may have more leaves' worth of hosts than asked: the first ones are used.
Result<std::vector<simgrid::s4u::Host*>> buildPlatform(simgrid::s4u::Engine& engine, const PlatformSpec& spec,
                                                       int hosts, int coresPerHost);

// Host speed in flop/s that the replay's computation amounts are counted against.
constexpr double kHostFlops = 1e9;

}  // namespace tsr::sim
