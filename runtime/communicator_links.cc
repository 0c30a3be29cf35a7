// The communicator's links (communicator.h): the cost model's figures, given or probed,
// and a transport whose TCP send buffer suits a slow network link the probe found.
#include "runtime/communicator.h"

#include <fmt/format.h>

#include "algorithms/dense/cost_model.h"
#include "base/logging.h"
#include "runtime/bootstrap/bootstrap.h"
#include "runtime/link_probe.h"
#include "runtime/progress_engine.h"
#include "transport/ucx_context.h"
#include "transport/ucx_transport.h"

namespace tsr::runtime {

// The cost model's links: TSR_LINK_BW / TSR_LINK_LAT, then the probe for the classes this
// job uses that they left out (runtime/link_probe.h).
Status Communicator::chooseLinks() {
  algorithms::LinkModel links;
  algorithms::LinkSpec bw, lat;
  if (!config_.get("TSR_LINK_BW").empty()) {
    TSR_ASSIGN_OR_RETURN(bw, algorithms::applyLinkBandwidth(config_.get("TSR_LINK_BW"), links));
  }
  if (!config_.get("TSR_LINK_LAT").empty()) {
    TSR_ASSIGN_OR_RETURN(lat, algorithms::applyLinkLatency(config_.get("TSR_LINK_LAT"), links));
  }
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

// UCX fixes the TCP send buffer when its context is created, before the probe can measure
// the network; on a slow link the default (256 KiB) keeps a standing queue that BBR's round-
// trip probes turn into ring stalls (transport/ucx_context.h). So when the probe measured a
// slow network link, the job moves to a second transport sized for it: every rank decides
// from the same merged figure, so all of them do, or none. The peers' new addresses travel
// over the bootstrap; the first transport closes once every rank is connected anew (its
// probe traffic is over: the probe ends with an all-gather).
Status Communicator::fitSendBufferToProbedLink(const std::vector<bool>& fastLocal) {
  const size_t wanted = transport::tcpSendBufferForProbed(probedNetRate_);
  if (wanted == 0 || wanted == transport_->tcpSendBuffer() || !bootstrap_) return Status::ok();
  TSR_ASSIGN_OR_RETURN(auto fresh, transport::UcxTransport::create(rank_, size_, wanted));
  TSR_ASSIGN_OR_RETURN(auto addresses, bootstrap_->allGather(fresh->localAddress()));
  for (int r = 0; r < size_; ++r)
    if (addresses[r].empty())
      return Status(Code::kBootstrap, "rank " + std::to_string(r) + " (" + hosts_[r] +
                                          ") sent no transport address for the resized transport");
  fresh->setPeerHosts(hosts_);
  TSR_RETURN_IF_ERROR(fresh->connect(addresses, fastLocal));
  TSR_RETURN_IF_ERROR(fresh->settle(config_.bootstrapTimeoutMs()));
  TSR_RETURN_IF_ERROR(bootstrap_->barrier());
  transport_ = std::move(fresh);
  sendBufferWhy_ = fmt::format("sized to the probed net link, {:.1f} MB/s", probedNetRate_ / 1e6);
  log::get("runtime")->info("rank {}: TCP send buffer {} bytes, {}", rank_, wanted, sendBufferWhy_);
  return Status::ok();
}

std::string Communicator::tcpSendBufferNote() const {
  if (const char* user = std::getenv("UCX_TCP_SNDBUF")) return std::string("UCX_TCP_SNDBUF=") + user + " (yours)";
  return fmt::format("{} KiB, {}", transport_->tcpSendBuffer() / 1024, sendBufferWhy_);
}

}  // namespace tsr::runtime
