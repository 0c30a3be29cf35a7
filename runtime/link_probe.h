// The short probe that fills the cost model's link classes (algorithms/dense/cost_model.h)
// at communicator creation, for the classes TSR_LINK_BW / TSR_LINK_LAT did not set.
//
// Every rank measures the link to its right ring neighbour (a host link or a net link; the
// ring is ordered host after host, so the ranks at host boundaries measure the network):
// latency as half the best of three 8-byte round trips, bandwidth from the best of two
// 1 MiB transfers acknowledged by 8 bytes (after one untimed exchange of each: connection
// set-up). The figures are all-gathered over the bootstrap
// and every rank takes, per class, the median of the ranks that measured it, so all ranks
// hold the same model and choose the same algorithms. A class nobody measured keeps its
// default. It runs inside creation, before the closing barrier, driving the transport from
// the creating thread, so no rank can start a collective while a peer is still probing.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "algorithms/dense/cost_model.h"
#include "base/status.h"

namespace tsr::transport {
class Transport;
}

namespace tsr::runtime {

struct ProbeNeeds {
  bool host = false;  // measure the host class
  bool net = false;   // measure the net class
};

struct ProbeSetup {
  transport::Transport* transport = nullptr;
  uint32_t comm = 0;                 // tag communicator id: one no collective uses
  std::vector<int> ringOrder;        // position -> rank
  std::vector<std::string> hostIds;  // per rank: same value = same machine
  std::function<Result<std::vector<std::string>>(const std::string&)> allGather;
  int timeoutMs = 60000;
};

// Collective: every rank calls it with the same needs.
Status probeLinks(const ProbeSetup& setup, const ProbeNeeds& needs, algorithms::LinkModel& links);

// The pure part: per class, the median of the reported figures (rows of {isNet, latency s,
// bytes/s}, one per rank; a figure <= 0 means "not measured").
void mergeProbeReports(const std::vector<double>& rows, const ProbeNeeds& needs, algorithms::LinkModel& links);

}  // namespace tsr::runtime
