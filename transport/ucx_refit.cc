// UcxTransport::refitForLink (ucx_transport.h). UCX fixes the TCP send buffer when its context
// is created, before the link probe can measure the network; on a slow link the default
// (256 KiB) keeps a standing queue that BBR's round-trip probes turn into ring stalls
// (ucx_context.h). So when the probe measured a slow network link, the job moves to a second
// transport sized for it. The peers' new addresses travel over the bootstrap; the caller
// closes the first transport once every rank is connected anew (its probe traffic is over:
// the probe ends with an all-gather).
#include <algorithm>

#include "transport/ucx_context.h"
#include "transport/ucx_transport.h"

namespace tsr::transport {

Result<std::unique_ptr<UcxTransport>> UcxTransport::refitForLink(double netBytesPerSec, size_t minBytes,
                                                                 const std::vector<bool>& fastLocal,
                                                                 const PeerExchange& peers, int timeoutMs) const {
  size_t wanted = tcpSendBufferForProbed(netBytesPerSec);
  if (wanted) wanted = std::max(wanted, minBytes);
  if (wanted == 0 || wanted == tcpSendBuffer()) return std::unique_ptr<UcxTransport>();
  TSR_ASSIGN_OR_RETURN(auto fresh, create(rank_, size_, wanted));
  TSR_ASSIGN_OR_RETURN(auto addresses, peers.allGather(fresh->localAddress()));
  for (int r = 0; r < size_; ++r)
    if (addresses[r].empty())
      return Status(Code::kBootstrap, peerLabel(r, hosts_) + " sent no transport address for the resized transport");
  fresh->setPeerHosts(hosts_);
  TSR_RETURN_IF_ERROR(fresh->connect(addresses, fastLocal));
  TSR_RETURN_IF_ERROR(fresh->settle(timeoutMs));
  TSR_RETURN_IF_ERROR(peers.barrier());
  return fresh;
}

}  // namespace tsr::transport
