#include "tools/sim/platform.h"

#include <algorithm>
#include <simgrid/s4u.hpp>

namespace tsr::sim {

namespace sg4 = simgrid::s4u;

Status validate(const PlatformSpec& s) {
  auto bad = [](const std::string& what) { return Status(Code::kInvalidArgument, "platform: " + what); };
  if (s.kind != "switch" && s.kind != "fattree" && s.kind != "xml") return bad("kind '" + s.kind + "'");
  if (!(s.rate > 0) || !(s.hostRate > 0)) return bad("rates must be positive");
  if (s.latency < 0 || s.hostLatency < 0) return bad("latencies must not be negative");
  if (s.kind == "fattree" && (s.leafHosts < 1 || s.spines < 0))
    return bad("fat tree needs leafHosts >= 1, spines >= 0");
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

}  // namespace

Result<std::vector<sg4::Host*>> buildPlatform(sg4::Engine& engine, const PlatformSpec& s, int hosts, int cores) {
  TSR_RETURN_IF_ERROR(validate(s));
  if (s.kind == "switch") return buildSwitch(s, hosts, cores);
  if (s.kind == "fattree") return buildFatTree(s, hosts, cores);
  engine.load_platform(s.xmlFile);
  std::vector<sg4::Host*> all = engine.get_all_hosts();
  std::sort(all.begin(), all.end(), [](sg4::Host* a, sg4::Host* b) { return a->get_name() < b->get_name(); });
  if (static_cast<int>(all.size()) < hosts)
    return Status(Code::kInvalidArgument,
                  s.xmlFile + " has " + std::to_string(all.size()) + " hosts, the job needs " + std::to_string(hosts));
  all.resize(hosts);
  return all;
}

}  // namespace tsr::sim
