// Runs N ranks as threads of this process, each with its own Communicator over real UCX and a
// real (TCP, authenticated) bootstrap on 127.0.0.1.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/port_reservation.h"
#include "runtime/communicator.h"

namespace tsr::testing {

runtime::LaunchInfo threadLaunchInfo(int rank, int size, const std::vector<uint16_t>& ports,
                                     const std::string& secret = "test-secret-of-16+bytes");

// Creates N communicators concurrently (creation is collective) and calls body on each rank's
// thread. Fails the current test if creation fails.
void runRanks(int size, const std::function<void(runtime::Communicator&)>& body,
              const std::map<std::string, std::string>& settings = {});

// Like runRanks, with settings that may differ per rank (settingsOf(rank)).
using Settings = std::map<std::string, std::string>;
void runRanksEach(int size, const std::function<void(runtime::Communicator&)>& body,
                  const std::function<Settings(int rank)>& settingsOf);

// Like runRanksEach, every rank's UCX transport wrapped by `wrap` (Communicator::create).
void runRanksWrapped(int size, const std::function<void(runtime::Communicator&)>& body,
                     const std::function<Settings(int rank)>& settingsOf,
                     const runtime::Communicator::TransportWrapper& wrap);

}  // namespace tsr::testing
