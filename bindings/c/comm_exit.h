// Private to libtessera: communicators still open when the process exits are closed then, as
// tsr_comm_destroy closes them (the peers get a goodbye, not a dead rank), before what they use
// is torn down. Without it a communicator destroyed late, by a static destructor (torch 2.x
// keeps its process groups in a static registry) or never, had its progress thread running
// into OpenSSL after OpenSSL's own exit handler had freed it: a crash at every rank's exit.
// The handler is registered when the first communicator has been made, so it runs before the
// exit handlers of everything that creation set up.
#pragma once

#include <memory>

#include "bindings/c/comm_life.h"

namespace tsr::capi {

// Closes `life`'s communicator at exit unless it was destroyed before.
void closeAtExit(const std::shared_ptr<CommLife>& life);

}  // namespace tsr::capi
