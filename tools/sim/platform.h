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
//  * gpuhosts: hosts of G GPUs (G = ranks per host), each GPU its own SimGrid host with its own
//    NIC link into a two-level fat tree (leafHosts hosts = leafHosts * G NICs per leaf, `spines`
//    spines, default one per NIC under a leaf: non-blocking) and its own full-duplex link to the
//    host's GPU interconnect (hostRate, hostLatency: NVLink), which same-host pairs take instead
//    of the network. With nicsPerHost < G the GPUs share NICs: each GPU's link gets
//    rate * nicsPerHost / G, exact when every GPU of a NIC sends at once (the bandwidth phases of
//    the torus and hier), pessimistic for a flow that has its NIC alone (the ring's one
//    crossing per host).
//  * xml: the file's hosts, sorted by name, carry the job's hosts in that order.
// Otherwise, with several ranks per host, ranks of one host run on one SimGrid host (one core
// each) and talk over its loopback link (hostRate, hostLatency: UCX shared memory).
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
  std::string kind = "switch";  // switch | fattree | gpuhosts | xml
  double rate = 1.25e9;         // bytes/s of each network link (default 10 Gbit/s)
  double latency = 20e-6;       // seconds, host to host through one switch
  double hostRate = 4e9;        // same-host rate and latency (cost_model.h's defaults)
  double hostLatency = 3e-6;
  int leafHosts = 8;    // fattree
  int spines = 0;       // fattree, gpuhosts; 0 = non-blocking (one spine per NIC under a leaf)
  int nicsPerHost = 0;  // gpuhosts; 0 = one per GPU
  std::string xmlFile;
};

// Checks the numbers; InvalidArgument naming the bad one.
Status validate(const PlatformSpec& spec);

// Creates the platform for `hosts` hosts of `ranksPerHost` ranks in `engine` and returns the
// SimGrid host of each rank (ranks h*R .. h*R+R-1 on job host h): the same host for the ranks of
// one machine, except on gpuhosts (one per GPU). A fat tree may have more leaves' worth of
// hosts than asked: the first ones are used.
Result<std::vector<simgrid::s4u::Host*>> buildPlatform(simgrid::s4u::Engine& engine, const PlatformSpec& spec,
                                                       int hosts, int ranksPerHost);

// Host speed in flop/s that the replay's computation amounts are counted against.
constexpr double kHostFlops = 1e9;

}  // namespace tsr::sim
