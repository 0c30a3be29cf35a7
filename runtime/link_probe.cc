// The link probe (see link_probe.h).
#include "runtime/link_probe.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <cstring>

#include "algorithms/plan/executor.h"
#include "transport/transport.h"

namespace tsr::runtime {

namespace {

using algorithms::OpKind;
using algorithms::Plan;
using algorithms::PlanOp;
using algorithms::Slot;
using Clock = std::chrono::steady_clock;

// The first exchange with a peer pays for connection set-up (UCX's TCP transport connects
// lazily: 3.8 ms round trips on the emulated 1 Gbit/s cluster against ~35 us later), so one
// untimed exchange of each kind comes first. The payload is large enough that TCP's slow
// start and the rendezvous handshake do not dominate a 1 Gbit/s link.
constexpr size_t kPayloadElems = 128 * 1024;  // 1 MiB of i64
constexpr int kRoundTrips = 4;                // the first one untimed
constexpr int kTransfers = 3;                 // the first one untimed

// Send `elems` to the right, receive as much from the left, then acknowledge the left with
// one element and wait for the right's acknowledgement: done when the right has it all.
Result<std::shared_ptr<const Plan>> roundTripPlan(int left, int right, size_t elems) {
  auto plan = std::make_shared<Plan>();
  plan->algorithm = elems == 1 ? "link-probe-latency" : "link-probe-bandwidth";
  plan->collective = algorithms::CollectiveKind::kBarrier;
  plan->dtype = DataType::kI64;
  plan->count = elems;
  plan->add({.kind = OpKind::kSend, .peer = right, .msgId = 0, .src = {Slot::kInput, 0}, .count = elems});
  uint32_t got =
      plan->add({.kind = OpKind::kRecv, .peer = left, .msgId = 0, .dst = {Slot::kOutput, 0}, .count = elems});
  plan->add({.kind = OpKind::kSend, .peer = left, .msgId = 1, .src = {Slot::kOutput, 0}, .count = 1, .deps = {got}});
  plan->add(
      {.kind = OpKind::kRecv, .peer = right, .msgId = 1, .dst = {Slot::kOutput, elems * sizeof(int64_t)}, .count = 1});
  TSR_RETURN_IF_ERROR(plan->finalize());
  return std::shared_ptr<const Plan>(std::move(plan));
}

// Runs one plan to completion by driving the transport from this thread (the progress
// thread does not exist yet); returns the seconds it took.
Result<double> timeRoundTrip(const ProbeSetup& setup, const std::shared_ptr<const Plan>& plan, uint32_t seq,
                             std::vector<int64_t>& in, std::vector<int64_t>& out) {
  transport::Transport& t = *setup.transport;
  algorithms::RunBuffers buffers{in.data(), out.data(), nullptr, transport::MemoryType::kHost};
  algorithms::PlanExecutor ex(plan, buffers, {t.rank(), setup.comm, seq}, t);
  auto t0 = Clock::now();
  auto deadline = t0 + std::chrono::milliseconds(setup.timeoutMs);
  Status st = ex.start();
  while (st.code() == Code::kInProgress && Clock::now() < deadline) {
    // Yield when idle: ranks often outnumber cores, and a spinning rank would hold the core
    // its peer needs to answer (4 ms scheduler slices: 12 ms "round trips" on one host).
    if (!t.progress()) std::this_thread::yield();
    st = ex.progress();
  }
  double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (st.code() == Code::kInProgress)
    st = Status(Code::kTimeout,
                "link probe: no answer from the ring neighbours within " + std::to_string(setup.timeoutMs) + " ms");
  if (!st.isOk()) {
    ex.abort(st);
    for (int spin = 0; spin < 100000 && !ex.quiescent(); ++spin) t.progress();
    return st;
  }
  return seconds;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

void mergeProbeReports(const std::vector<double>& rows, const ProbeNeeds& needs, algorithms::LinkModel& links) {
  for (bool net : {false, true}) {
    if (net ? !needs.net : !needs.host) continue;
    std::vector<double> lat, bw;
    for (size_t i = 0; i + 2 < rows.size(); i += 3) {
      if ((rows[i] > 0.5) != net) continue;
      if (rows[i + 1] > 0) lat.push_back(rows[i + 1]);
      if (rows[i + 2] > 0) bw.push_back(rows[i + 2]);
    }
    algorithms::LinkCost& link = net ? links.net : links.host;
    if (!lat.empty()) link.latencySec = median(lat);
    if (!bw.empty()) link.bytesPerSec = median(bw);
  }
}

Status probeLinks(const ProbeSetup& setup, const ProbeNeeds& needs, algorithms::LinkModel& links) {
  const int size = setup.transport->size(), rank = setup.transport->rank();
  if (size < 2 || (!needs.host && !needs.net)) return Status::ok();
  const std::vector<int>& order = setup.ringOrder;
  int pos = static_cast<int>(std::find(order.begin(), order.end(), rank) - order.begin());
  int left = order[(pos + size - 1) % size], right = order[(pos + 1) % size];
  bool net = setup.hostIds[right] != setup.hostIds[rank];

  std::vector<int64_t> in(kPayloadElems + 1, rank), out(kPayloadElems + 1);
  TSR_ASSIGN_OR_RETURN(auto ping, roundTripPlan(left, right, 1));
  TSR_ASSIGN_OR_RETURN(auto bulk, roundTripPlan(left, right, kPayloadElems));
  uint32_t seq = 0;
  double rtt = 1e30, transfer = 1e30;
  for (int i = 0; i < kRoundTrips; ++i) {
    TSR_ASSIGN_OR_RETURN(double t, timeRoundTrip(setup, ping, seq++, in, out));
    if (i > 0) rtt = std::min(rtt, t);
  }
  for (int i = 0; i < kTransfers; ++i) {
    TSR_ASSIGN_OR_RETURN(double t, timeRoundTrip(setup, bulk, seq++, in, out));
    if (i > 0) transfer = std::min(transfer, t);
  }
  double wire = transfer - rtt;  // the payload's own time, without the two latencies
  if (wire <= 0) wire = transfer;
  double mine[3] = {net ? 1.0 : 0.0, rtt / 2, kPayloadElems * sizeof(int64_t) / wire};
  TSR_ASSIGN_OR_RETURN(auto blobs, setup.allGather(std::string(reinterpret_cast<const char*>(mine), sizeof mine)));
  std::vector<double> rows;
  for (size_t r = 0; r < blobs.size(); ++r) {
    if (blobs[r].size() != sizeof mine)
      return Status(Code::kBootstrap, "link probe: rank " + std::to_string(r) + " sent a " +
                                          std::to_string(blobs[r].size()) + "-byte report");
    double theirs[3];
    std::memcpy(theirs, blobs[r].data(), sizeof theirs);
    rows.insert(rows.end(), theirs, theirs + 3);
  }
  mergeProbeReports(rows, needs, links);
  return Status::ok();
}

}  // namespace tsr::runtime
