#include "tools/sim/platform.h"

#include <algorithm>
#include <simgrid/s4u.hpp>

namespace tsr::sim {

namespace sg4 = simgrid::s4u;

Status validate(const PlatformSpec& s) {
  auto bad = [](const std::string& what) { return Status(Code::kInvalidArgument, "platform: " + what); };
  if (s.kind != "switch" && s.kind != "fattree" && s.kind != "gpuhosts" && s.kind != "xml")
    return bad("kind '" + s.kind + "': switch, fattree, gpuhosts or xml");
  if (!(s.rate > 0) || !(s.hostRate > 0)) return bad("rates must be positive");
  if (s.latency < 0 || s.hostLatency < 0) return bad("latencies must not be negative");
  if ((s.kind == "fattree" || s.kind == "gpuhosts") && (s.leafHosts < 1 || s.spines < 0))
    return bad(s.kind + " needs leafHosts >= 1, spines >= 0");
  if (s.nicsPerHost < 0) return bad("nicsPerHost " + std::to_string(s.nicsPerHost) + " is negative");
  if (s.kind == "xml" && s.xmlFile.empty()) return bad("xml needs a file");
  return Status::ok();
}

namespace {

sg4::Host* addHost(sg4::NetZone* zone, const std::string& name, int cores) {
  return zone->create_host(name, kHostFlops)->set_core_count(cores)->seal();
}

std::vector<sg4::Host*> buildSwitch(const PlatformSpec& s, int hosts, int cores) {
  auto* zone = sg4::create_star_zone("switch");
  std::vector<sg4::Host*> out;
  for (int h = 0; h < hosts; ++h) {
    auto* host = addHost(zone, "host" + std::to_string(h), cores);
    auto* nic = zone->create_split_duplex_link("nic" + std::to_string(h), s.rate)->set_latency(s.latency / 2)->seal();
    // UP towards the crossbar; symmetrical: the DOWN half carries what comes in.
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                    {sg4::LinkInRoute(nic, sg4::LinkInRoute::Direction::UP)}, true);
    if (cores > 1) {
      auto* loop = zone->create_link("loop" + std::to_string(h), s.hostRate)
                       ->set_latency(s.hostLatency)
                       ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
                       ->seal();
      zone->add_route(host->get_netpoint(), host->get_netpoint(), nullptr, nullptr, {sg4::LinkInRoute(loop)}, false);
    }
    out.push_back(host);
  }
  zone->seal();
  return out;
}

std::vector<sg4::Host*> buildFatTree(const PlatformSpec& s, int hosts, int cores) {
  const unsigned perLeaf = static_cast<unsigned>(s.leafHosts);
  const unsigned leaves = static_cast<unsigned>((hosts + s.leafHosts - 1) / s.leafHosts);
  const unsigned spines = static_cast<unsigned>(s.spines > 0 ? s.spines : s.leafHosts);
  std::vector<sg4::Host*> made;
  auto netpoint = [&](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
    auto* host = addHost(zone, "host" + std::to_string(id), cores);
    made.push_back(host);
    return std::make_pair(host->get_netpoint(), static_cast<simgrid::kernel::routing::NetPoint*>(nullptr));
  };
  std::function<sg4::ClusterCallbacks::ClusterLinkCb> loopback = {};
  if (cores > 1)
    loopback = [&](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
      return zone->create_link("loop" + std::to_string(id), s.hostRate)
          ->set_latency(s.hostLatency)
          ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
          ->seal();
    };
  // Levels bottom up: a leaf holds perLeaf hosts under 1 up link each; a spine holds `leaves`
  // leaves, each leaf with one link up to every spine.
  sg4::FatTreeParams params(2, {perLeaf, leaves}, {1, spines}, {1, 1});
  auto* zone = sg4::create_fatTree_zone("fattree", nullptr, params, sg4::ClusterCallbacks(netpoint, loopback, {}),
                                        s.rate, s.latency / 2, sg4::Link::SharingPolicy::SPLITDUPLEX);
  zone->seal();
  std::sort(made.begin(), made.end(), [](sg4::Host* a, sg4::Host* b) {
    return std::stoi(a->get_name().substr(4)) < std::stoi(b->get_name().substr(4));
  });
  made.resize(hosts);
  return made;
}

// GPUs as the fat tree's leaves (their NIC links), leafHosts hosts' worth under each leaf
// switch; same-host pairs bypass the tree through the GPUs' own interconnect links.
std::vector<sg4::Host*> buildGpuHosts(const PlatformSpec& s, int hosts, int gpus) {
  const unsigned perLeaf = static_cast<unsigned>(s.leafHosts * gpus);
  const unsigned leaves = static_cast<unsigned>((hosts + s.leafHosts - 1) / s.leafHosts);
  const unsigned spines = static_cast<unsigned>(s.spines > 0 ? s.spines : static_cast<int>(perLeaf));
  const int nics = s.nicsPerHost > 0 ? std::min(s.nicsPerHost, gpus) : gpus;
  std::vector<sg4::Host*> made;
  auto netpoint = [&](sg4::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
    auto* gpu = addHost(zone, "gpu" + std::to_string(id), 1);
    made.push_back(gpu);
    return std::make_pair(gpu->get_netpoint(), static_cast<simgrid::kernel::routing::NetPoint*>(nullptr));
  };
  sg4::FatTreeParams params(2, {perLeaf, leaves}, {1, spines}, {1, 1});
  auto* zone = sg4::create_fatTree_zone("gpuhosts", nullptr, params, sg4::ClusterCallbacks(netpoint),
                                        s.rate * nics / gpus, s.latency / 2, sg4::Link::SharingPolicy::SPLITDUPLEX);
  std::sort(made.begin(), made.end(), [](sg4::Host* a, sg4::Host* b) {
    return std::stoi(a->get_name().substr(3)) < std::stoi(b->get_name().substr(3));
  });
  made.resize(static_cast<size_t>(hosts) * gpus);
  std::vector<sg4::Link*> fabric;
  for (size_t g = 0; g < made.size(); ++g)
    fabric.push_back(
        zone->create_split_duplex_link("nvlink" + std::to_string(g), s.hostRate)->set_latency(s.hostLatency / 2));
  for (auto* link : fabric) link->seal();
  for (int h = 0; h < hosts; ++h)
    for (int a = h * gpus; a < (h + 1) * gpus; ++a)
      for (int b = h * gpus; b < (h + 1) * gpus; ++b)
        if (a != b)
          zone->add_bypass_route(made[a]->get_netpoint(), made[b]->get_netpoint(), nullptr, nullptr,
                                 {sg4::LinkInRoute(fabric[a], sg4::LinkInRoute::Direction::UP),
                                  sg4::LinkInRoute(fabric[b], sg4::LinkInRoute::Direction::DOWN)});
  zone->seal();
  return made;
}

}  // namespace

Result<std::vector<sg4::Host*>> buildPlatform(sg4::Engine& engine, const PlatformSpec& s, int hosts, int ranksPerHost) {
  TSR_RETURN_IF_ERROR(validate(s));
  if (s.kind == "gpuhosts") return buildGpuHosts(s, hosts, ranksPerHost);
  std::vector<sg4::Host*> machines;
  if (s.kind == "switch") {
    machines = buildSwitch(s, hosts, ranksPerHost);
  } else if (s.kind == "fattree") {
    machines = buildFatTree(s, hosts, ranksPerHost);
  } else {
    engine.load_platform(s.xmlFile);
    machines = engine.get_all_hosts();
    std::sort(machines.begin(), machines.end(),
              [](sg4::Host* a, sg4::Host* b) { return a->get_name() < b->get_name(); });
    if (static_cast<int>(machines.size()) < hosts)
      return Status(Code::kInvalidArgument, s.xmlFile + " has " + std::to_string(machines.size()) +
                                                " hosts, the job needs " + std::to_string(hosts));
  }
  std::vector<sg4::Host*> byRank;
  for (int r = 0; r < hosts * ranksPerHost; ++r) byRank.push_back(machines[r / ranksPerHost]);
  return byRank;
}

}  // namespace tsr::sim
