// The communicator's links (communicator.h): the cost model's figures, given or probed,
// and a transport whose TCP send buffer suits a slow network link the probe found.
#include "runtime/communicator.h"

#include <set>
#include <string>

#include <fmt/format.h>

#include "algorithms/dense/cost_model.h"
#include "base/logging.h"
#include "runtime/bootstrap/bootstrap.h"
#include "runtime/link_probe.h"
#include "runtime/progress_engine.h"
#include "transport/ucx_context.h"
#include "transport/ucx_transport.h"

namespace tsr::runtime {

// The cost model's links: TSR_LINK_BW / TSR_LINK_LAT / TSR_LINK_NICS, then the probe for the
// classes this job uses that they left out (runtime/link_probe.h).
Status Communicator::chooseLinks() {
  algorithms::LinkModel links;
  algorithms::LinkSpec bw, lat;
  if (!config_.get("TSR_LINK_BW").empty()) {
    TSR_ASSIGN_OR_RETURN(bw, algorithms::applyLinkBandwidth(config_.get("TSR_LINK_BW"), links));
  }
  if (!config_.get("TSR_LINK_LAT").empty()) {
    TSR_ASSIGN_OR_RETURN(lat, algorithms::applyLinkLatency(config_.get("TSR_LINK_LAT"), links));
  }
  links.netNics = static_cast<int>(config_.getInt("TSR_LINK_NICS"));
  const algorithms::JobShape& job = selector_->shape();
  ProbeNeeds needs;
  needs.host = job.ranksPerHost > 1 && !(bw.hostGiven && lat.hostGiven);
  needs.net = job.hosts > 1 && !(bw.netGiven && lat.netGiven);
  selector_->setLinks(links);
  if (needs.host || needs.net) {
    algorithms::LinkModel probed = links;
    ProbeSetup probe;
    probe.transport = transport_.get();
    probe.comm = EngineOptions{}.comm + 1;  // its own tags: collectives still start at #0
    probe.ringOrder = dense_.order;
    probe.hostIds = hostIds_;
    probe.allGather = [this](const std::string& blob) { return bootstrap_->allGather(blob); };
    probe.timeoutMs = config_.bootstrapTimeoutMs();
    TSR_RETURN_IF_ERROR(probeLinks(probe, needs, probed));
    // What the user set wins over what was measured.
    if (bw.hostGiven) probed.host.bytesPerSec = links.host.bytesPerSec;
    if (lat.hostGiven) probed.host.latencySec = links.host.latencySec;
    if (bw.netGiven) probed.net.bytesPerSec = links.net.bytesPerSec;
    if (lat.netGiven) probed.net.latencySec = links.net.latencySec;
    links = probed;
    selector_->setLinks(links);
    if (needs.net && !bw.netGiven) probedNetRate_ = links.net.bytesPerSec;
  }
  log::get("runtime")->info("rank {}: cost model links: {}{}", rank_, algorithms::describe(links),
                            needs.host || needs.net ? " (probed where not set)" : "");
  return Status::ok();
}

// A slow network link the probe found gets a transport with a TCP send buffer to suit it
// (UcxTransport::refitForLink says why); every rank decides from the same merged figure.
Status Communicator::fitSendBufferToProbedLink(const std::vector<bool>& fastLocal) {
  if (!bootstrap_ || probedNetRate_ <= 0) return Status::ok();
  transport::UcxTransport::PeerExchange peers{[this](const std::string& blob) { return bootstrap_->allGather(blob); },
                                              [this] { return bootstrap_->barrier(); }};
  // Job-wide, like the probed figure (the refit is collective): some host has several ranks.
  const bool sharedHost = std::set<std::string>(hostIds_.begin(), hostIds_.end()).size() < hostIds_.size();
  const size_t floor = sharedHost && sameHostPeersUseTcp() ? transport::kLoopbackTcpSendBuffer : 0;
  TSR_ASSIGN_OR_RETURN(auto refitted,
                       transport_->refitForLink(probedNetRate_, floor, fastLocal, peers, config_.bootstrapTimeoutMs()));
  if (!refitted) return Status::ok();
  transport_ = std::move(refitted);
  sendBufferWhy_ = fmt::format("sized to the probed net link, {:.1f} MB/s{}", probedNetRate_ / 1e6,
                               floor ? ", at least loopback TCP's need (same-host peers)" : "");
  log::get("runtime")->info("rank {}: TCP send buffer {} bytes, {}", rank_, transport_->tcpSendBuffer(),
                            sendBufferWhy_);
  return Status::ok();
}

std::string Communicator::tcpSendBufferNote() const {
  if (const char* user = std::getenv("UCX_TCP_SNDBUF")) return std::string("UCX_TCP_SNDBUF=") + user + " (yours)";
  return fmt::format("{} KiB, {}", transport_->tcpSendBuffer() / 1024, sendBufferWhy_);
}

}  // namespace tsr::runtime
