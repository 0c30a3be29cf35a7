#include "tools/sim/replay.h"

#include <simgrid/s4u.hpp>

#include "algorithms/plan/executor.h"

namespace tsr::sim {

namespace sg4 = simgrid::s4u;
using algorithms::OpKind;
using algorithms::Plan;
using algorithms::PlanExecutor;
using algorithms::PlanOp;

namespace {

constexpr uint32_t kHeader = UINT32_MAX;  // mailbox id of a pair's header
constexpr size_t kHeaderBytes = sizeof(algorithms::WireHeader);
int gPayload = 0;  // SimGrid needs a non-null payload; no data travels

sg4::Mailbox* mailbox(int from, int to, uint32_t id) {
  return sg4::Mailbox::by_name(std::to_string(from) + ">" + std::to_string(to) + "#" +
                               (id == kHeader ? std::string("h") : std::to_string(id)));
}

bool isTransfer(OpKind k) {
  return k == OpKind::kSend || k == OpKind::kRecv || k == OpKind::kRecvReduce || k == OpKind::kRecvMerge;
}

struct Totals {
  ReplayResult result;
  std::vector<size_t> opsDone;  // per rank, for a deadlock report
};

// One rank's executor, as the actor's body.
class RankReplay {
 public:
  RankReplay(int rank, const Plan& plan, const ReplayOptions& o, Totals& totals)
      : rank_(rank), plan_(plan), o_(o), totals_(totals), pending_(plan.depCount),
        headerIn_(plan.recvPeers.size(), !o.headers),
        inlineIn_(plan.recvPeers.size(), false), inlineWaits_(plan.recvPeers.size(), false),
        sinks_(plan.ops.size() + plan.recvPeers.size(), nullptr) {}

  void operator()() {
    const Plan& p = plan_;
    if (o_.headers) {
      for (size_t i = 0; i < p.recvPeers.size(); ++i)
        track(mailbox(p.recvPeers[i], rank_, kHeader)->get_async(&sinks_[p.ops.size() + i]), Flight::kHeaderIn, i);
      for (size_t i = 0; i < p.sendPeers.size(); ++i)
        if (!inlinable(p.firstSendOp[i])) {
          track(mailbox(rank_, p.sendPeers[i], kHeader)->put_async(&gPayload, kHeaderBytes), Flight::kHeaderOut, i);
          totals_.result.headerBytes += kHeaderBytes;
        }
    }
    for (uint32_t i = 0; i < p.ops.size(); ++i)
      if (pending_[i] == 0) enqueue(i);
    while (done_ < p.ops.size() || !comms_.empty()) {
      postReady();
      while (localHead_ < readyLocal_.size()) {
        uint32_t index = readyLocal_[localHead_++];
        compute(p.ops[index]);
        markDone(index);
        postReady();
      }
      if (comms_.empty()) break;  // nothing in flight, nothing ready: the plan is stuck
      ssize_t at = sg4::Comm::wait_any(comms_);
      do {
        complete(static_cast<size_t>(at));
        at = comms_.empty() ? -1 : sg4::Comm::test_any(comms_);
      } while (at >= 0);
    }
    totals_.result.finish[rank_] = sg4::Engine::get_clock();
    totals_.opsDone[rank_] = done_;
  }

 private:
  enum class Flight : uint8_t { kOp, kHeaderIn, kHeaderOut };
  struct InFlight {
    Flight what;
    size_t index;  // op index, or the peer's slot for headers
  };

  bool inlinable(uint32_t index) const {
    const PlanOp& op = plan_.ops[index];
    return o_.headers && !op.onArrival && bytes(op) <= PlanExecutor::kInlineBytes;
  }
  size_t bytes(const PlanOp& op) const { return op.count * dataTypeSize(plan_.dtype); }
  size_t recvSlot(int peer) const {
    for (size_t i = 0; i < plan_.recvPeers.size(); ++i)
      if (plan_.recvPeers[i] == peer) return i;
    return 0;
  }

  void track(sg4::CommPtr comm, Flight what, size_t index) {
    comms_.push_back(std::move(comm));
    flights_.push_back({what, index});
    ++totals_.result.messages;
  }

  void enqueue(uint32_t index) {
    if (isTransfer(plan_.ops[index].kind)) readyTransfers_.push_back(index);
    else readyLocal_.push_back(index);
  }

  void markDone(uint32_t index) {
    ++done_;
    for (uint32_t next : plan_.dependents[index])
      if (--pending_[next] == 0) enqueue(next);
  }

  void compute(const PlanOp& op) {
    double rate = 0;
    switch (op.kind) {
      case OpKind::kCopy:
        if (op.dst.slot == op.src.slot && op.dst.offset == op.src.offset) return;  // executor skips it
        rate = o_.copyRate;
        break;
      case OpKind::kDivide: rate = o_.copyRate; break;
      default: rate = o_.reduceRate; break;  // reduce, recv-reduce, merge, caller's local work
    }
    if (rate <= 0 || op.count == 0) return;
    double seconds = static_cast<double>(bytes(op)) / rate;
    totals_.result.computeSeconds += seconds;
    sg4::this_actor::execute(seconds * sg4::this_actor::get_host()->get_speed());
  }

  void postReady() {
    for (uint32_t index : readyTransfers_) post(index);
    readyTransfers_.clear();
  }

  void post(uint32_t index) {
    const PlanOp& op = plan_.ops[index];
    const bool first = plan_.peerSlot[index] >= 0 && inlinable(index);
    if (op.kind == OpKind::kSend) {
      size_t b = bytes(op);
      totals_.result.payloadBytes += b;
      if (first) {
        totals_.result.headerBytes += kHeaderBytes;
        track(mailbox(rank_, op.peer, kHeader)->put_async(&gPayload, b + kHeaderBytes), Flight::kOp, index);
      } else {
        track(mailbox(rank_, op.peer, op.msgId)->put_async(&gPayload, b), Flight::kOp, index);
      }
      return;
    }
    if (first) {  // the payload rides on the header, received from the start
      size_t slot = static_cast<size_t>(plan_.peerSlot[index]);
      if (inlineIn_[slot]) finishRecv(index);
      else inlineWaits_[slot] = true;
      return;
    }
    track(mailbox(op.peer, rank_, op.msgId)->get_async(&sinks_[index]), Flight::kOp, index);
  }

  void finishRecv(uint32_t index) {
    const PlanOp& op = plan_.ops[index];
    if (op.kind != OpKind::kRecv) compute(op);  // reduce or merge where it landed
    markDone(index);
  }

  void complete(size_t at) {
    InFlight f = flights_[at];
    comms_.erase(comms_.begin() + static_cast<long>(at));
    flights_.erase(flights_.begin() + static_cast<long>(at));
    if (f.what == Flight::kHeaderOut) return;
    if (f.what == Flight::kHeaderIn) {
      headerIn_[f.index] = true;
      int peer = plan_.recvPeers[f.index];
      uint32_t firstOp = plan_.firstRecvOp[f.index];
      if (inlinable(firstOp)) {
        inlineIn_[f.index] = true;
        if (inlineWaits_[f.index]) finishRecv(firstOp);
      }
      // Receives that landed before the header are used now (executor: headerTaken).
      std::vector<uint32_t> held;
      held.swap(heldRecvs_);
      for (uint32_t index : held) {
        if (plan_.ops[index].peer == peer) finishRecv(index);
        else heldRecvs_.push_back(index);
      }
      return;
    }
    const PlanOp& op = plan_.ops[f.index];
    if (op.kind == OpKind::kSend) {
      markDone(static_cast<uint32_t>(f.index));
    } else if (!op.onArrival && !headerIn_[recvSlot(op.peer)]) {
      heldRecvs_.push_back(static_cast<uint32_t>(f.index));
    } else {
      finishRecv(static_cast<uint32_t>(f.index));
    }
  }

  const int rank_;
  const Plan& plan_;
  const ReplayOptions& o_;
  Totals& totals_;
  std::vector<uint32_t> pending_;
  std::vector<bool> headerIn_, inlineIn_, inlineWaits_;
  std::vector<void*> sinks_;  // where SimGrid writes each receive's (dummy) payload
  std::vector<uint32_t> readyTransfers_, readyLocal_, heldRecvs_;
  size_t localHead_ = 0;
  size_t done_ = 0;
  std::vector<sg4::CommPtr> comms_;
  std::vector<InFlight> flights_;
};

Status configure(const ReplayOptions& o) {
  if (o.network == "ideal") {
    sg4::Engine::set_config("network/model:CM02");
    sg4::Engine::set_config("network/latency-factor:1");
    sg4::Engine::set_config("network/bandwidth-factor:1");
    sg4::Engine::set_config("network/TCP-gamma:0");
    sg4::Engine::set_config("network/crosstraffic:0");
  } else if (o.network != "lv08") {
    return Status(Code::kInvalidArgument, "network model '" + o.network + "': ideal or lv08");
  }
  return Status::ok();
}

}  // namespace

Result<ReplayResult> replay(const JobPlans& job, const PlatformSpec& platform, const ReplayOptions& options,
                            int ranksPerHost) {
  const int n = static_cast<int>(job.plans.size());
  if (n < 1 || ranksPerHost < 1 || n % ranksPerHost != 0)
    return Status(Code::kInvalidArgument, "replay: no plans, or ranks not a multiple of ranks per host");
  int argc = 2;
  char arg0[] = "tsr-sim", arg1[] = "--log=root.thresh:warning";
  char* argv[] = {arg0, arg1, nullptr};
  sg4::Engine engine(&argc, argv);
  TSR_RETURN_IF_ERROR(configure(options));
  TSR_ASSIGN_OR_RETURN(auto hosts, buildPlatform(engine, platform, n / ranksPerHost, ranksPerHost));
  Totals totals;
  totals.result.finish.assign(n, -1);
  totals.opsDone.assign(n, 0);
  for (int r = 0; r < n; ++r)
    sg4::Actor::create("rank" + std::to_string(r), hosts[job.hostOfRank[r]],
                       RankReplay(r, *job.plans[r], options, totals));
  engine.run();
  for (int r = 0; r < n; ++r) {
    if (totals.result.finish[r] < 0 || totals.opsDone[r] != job.plans[r]->ops.size())
      return Status(Code::kInternal, "replay: rank " + std::to_string(r) + " stopped after " +
                                         std::to_string(totals.opsDone[r]) + " of " +
                                         std::to_string(job.plans[r]->ops.size()) + " ops (plans deadlock)");
    totals.result.seconds = std::max(totals.result.seconds, totals.result.finish[r]);
  }
  return totals.result;
}

}  // namespace tsr::sim
