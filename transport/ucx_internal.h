// What the UCX transport's source files share (UCX types in the signatures: include only
// from transport/*.cc).
#pragma once

#include <string>

#include <ucp/api/ucp.h>

#include "base/status.h"

namespace tsr::transport {

// UCX's status as ours: failures of a peer as kPeerFailed, `what` says which operation.
Status fromUcs(ucs_status_t st, const std::string& what);
// Send completion callback: fills the Completion given as user data, frees the request.
void onSendDone(void* request, ucs_status_t st, void* user);
// The same for a timed send (user data: UcxTransport::TimedSend): stops its clock too.
void onTimedSendDone(void* request, ucs_status_t st, void* user);

}  // namespace tsr::transport
