#include "tools/sim/replay.h"

#include <simgrid/s4u.hpp>

#include <deque>
#include <fstream>
#include <unordered_map>

#include "algorithms/plan/executor.h"

namespace tsr::sim {

namespace sg4 = simgrid::s4u;
using algorithms::OpKind;
using algorithms::Plan;
using algorithms::PlanExecutor;
using algorithms::PlanOp;

namespace {

constexpr size_t kStackKiB = 128;         // every actor's stack (replay())
constexpr uint32_t kHeader = UINT32_MAX;  // message id of a pair's argument header
constexpr size_t kHeaderBytes = sizeof(algorithms::WireHeader);

bool isTransfer(OpKind k) {
  return k == OpKind::kSend || k == OpKind::kRecv || k == OpKind::kRecvReduce || k == OpKind::kRecvMerge;
}

// What a rank hears back when one of its transfers is done.
enum class Flight : uint8_t { kOp, kHeaderIn, kHeaderOut };
struct Done {
  Flight what;
  size_t index;  // op index, or the peer's slot for headers
};

// Everything the ranks share: the matching of sends to receives and the ranks' inboxes.
// Both sides post into `posted` under the message's key; once both are there, a short-lived
// actor carries the bytes host to host (SimGrid starts the transfer then: UCX's rendezvous) and
// hands each side its Done. A rank thus waits on one semaphore whatever it has in flight.
struct World {
  struct Side {
    bool set = false;
    Done done{};
    size_t bytes = 0;
  };
  struct Pending {
    Side send, recv;
  };
  struct Transfer {
    int from, to;
    Done sent, received;
    size_t bytes;
  };
  // A pair's transfers beyond the window wait their turn, in the order they matched.
  struct Lane {
    int active = 0;
    std::deque<Transfer> waiting;
  };
  int ranks = 0;
  int pairWindow = 0;
  std::unordered_map<uint64_t, Lane> lanes;
  const JobPlans* job = nullptr;
  std::vector<sg4::Host*> hostOfRank;
  std::vector<std::deque<Done>> inbox;
  std::vector<sg4::SemaphorePtr> bell;
  size_t inFlight = 0, maxInFlight = 0;
  std::string tooMany;
  std::unordered_map<uint64_t, Pending> posted;
  ReplayResult result;
  std::vector<size_t> opsDone;
  std::string mismatch;

  uint64_t key(int from, int to, uint32_t id) const { return (static_cast<uint64_t>(from) * ranks + to) << 32 | id; }
  void deliver(int rank, Done d) {
    inbox[rank].push_back(d);
    bell[rank]->release();
  }
  void post(int from, int to, uint32_t id, bool isSend, Done done, size_t bytes) {
    Pending& p = posted[key(from, to, id)];
    (isSend ? p.send : p.recv) = Side{true, done, bytes};
    if (!p.send.set || !p.recv.set) return;
    if (p.send.bytes != p.recv.bytes && mismatch.empty())
      mismatch = "rank " + std::to_string(from) + " sends " + std::to_string(p.send.bytes) + " bytes to rank " +
                 std::to_string(to) + " where " + std::to_string(p.recv.bytes) + " are expected (message " +
                 std::to_string(id) + ")";
    Transfer t{from, to, p.send.done, p.recv.done, p.send.bytes};
    posted.erase(key(from, to, id));
    ++result.messages;
    if (pairWindow > 0) {
      Lane& lane = lanes[pairKey(from, to)];
      if (lane.active >= pairWindow) {
        lane.waiting.push_back(t);
        return;
      }
      ++lane.active;
    }
    start(t);
  }

 private:
  uint64_t pairKey(int from, int to) const { return static_cast<uint64_t>(from) * ranks + to; }

  // Each transfer in flight is an actor with its own stack: past the budget (maxInFlight) the
  // replay stops with an error that says so, rather than exhaust the machine's memory. With a
  // pair window the actor then carries the pair's waiting transfers one after another.
  void start(Transfer t) {
    if (!tooMany.empty()) return;
    if (++inFlight > maxInFlight) {
      tooMany = "more than " + std::to_string(maxInFlight) + " transfers in flight at once (rank " +
                std::to_string(t.from) + " to rank " + std::to_string(t.to) + "); each is an actor with a " +
                std::to_string(kStackKiB) + " KiB stack, bounded by half the memory available";
      for (int r = 0; r < ranks; ++r) bell[r]->release();  // every rank stops at its next wake-up
      return;
    }
    sg4::Actor::create("x", hostOfRank[t.from], [this, t]() mutable {
      for (;;) {
        sg4::Comm::sendto(hostOfRank[t.from], hostOfRank[t.to], t.bytes);
        deliver(t.from, t.sent);
        deliver(t.to, t.received);
        if (pairWindow == 0) break;
        Lane& lane = lanes[pairKey(t.from, t.to)];
        if (lane.waiting.empty()) {
          --lane.active;
          break;
        }
        t = lane.waiting.front();
        lane.waiting.pop_front();
      }
      --inFlight;
    });
  }
};

// One rank's executor, as the actor's body.
class RankReplay {
 public:
  RankReplay(int rank, const Plan& plan, const ReplayOptions& o, World& world)
      : rank_(rank),
        plan_(plan),
        o_(o),
        w_(world),
        pending_(plan.depCount),
        headerIn_(plan.recvPeers.size(), !o.headers),
        inlineIn_(plan.recvPeers.size(), false),
        inlineWaits_(plan.recvPeers.size(), false) {}

  void operator()() {
    const Plan& p = plan_;
    if (o_.headers) {
      for (size_t i = 0; i < p.recvPeers.size(); ++i) {
        uint32_t first = p.firstRecvOp[i];
        size_t bytes = kHeaderBytes + (inlinable(first) ? bytesOf(p.ops[first]) : 0);
        w_.post(p.recvPeers[i], rank_, kHeader, false, {Flight::kHeaderIn, i}, bytes);
        ++outstanding_;
      }
      for (size_t i = 0; i < p.sendPeers.size(); ++i)
        if (!inlinable(p.firstSendOp[i])) {
          w_.post(rank_, p.sendPeers[i], kHeader, true, {Flight::kHeaderOut, i}, kHeaderBytes);
          w_.result.headerBytes += kHeaderBytes;
          ++outstanding_;
        }
    }
    for (uint32_t i = 0; i < p.ops.size(); ++i)
      if (pending_[i] == 0) enqueue(i);
    for (;;) {
      postReady();
      while (localHead_ < readyLocal_.size()) {
        uint32_t index = readyLocal_[localHead_++];
        compute(p.ops[index]);
        markDone(index);
        postReady();
      }
      if (outstanding_ == 0) break;  // done, or stuck: nothing in flight and nothing ready
      w_.bell[rank_]->acquire();
      if (!w_.tooMany.empty()) return;
      Done d = w_.inbox[rank_].front();
      w_.inbox[rank_].pop_front();
      --outstanding_;
      complete(d);
    }
    w_.result.finish[rank_] = sg4::Engine::get_clock();
  }

 private:
  bool inlinable(uint32_t index) const {
    const PlanOp& op = plan_.ops[index];
    return o_.headers && !op.onArrival && bytesOf(op) <= PlanExecutor::kInlineBytes;
  }
  size_t bytesOf(const PlanOp& op) const { return op.count * dataTypeSize(plan_.dtype); }
  size_t recvSlot(int peer) const {
    for (size_t i = 0; i < plan_.recvPeers.size(); ++i)
      if (plan_.recvPeers[i] == peer) return i;
    return 0;
  }

  void enqueue(uint32_t index) {
    if (isTransfer(plan_.ops[index].kind))
      readyTransfers_.push_back(index);
    else
      readyLocal_.push_back(index);
  }

  void markDone(uint32_t index) {
    w_.opsDone[rank_] = ++done_;
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
      case OpKind::kDivide:
        rate = o_.copyRate;
        break;
      case OpKind::kLocal:  // Marsit's packing and bit merge: 64 f32 elements a word
      case OpKind::kRecvMerge:
        if (o_.packRate <= 0 || op.count == 0) return;
        charge(static_cast<double>(op.count) * 64 * 4 / o_.packRate);
        return;
      default:
        rate = w_.job->reducesSelect ? o_.selectRate : o_.reduceRate;
        break;  // reduce, recv-reduce
    }
    if (rate <= 0 || op.count == 0) return;
    charge(static_cast<double>(bytesOf(op)) / rate);
  }

  void charge(double seconds) {
    w_.result.computeSeconds += seconds;
    sg4::this_actor::execute(seconds * sg4::this_actor::get_host()->get_speed());
  }

  void postReady() {
    for (uint32_t index : readyTransfers_) post(index);
    readyTransfers_.clear();
  }

  void post(uint32_t index) {
    const PlanOp& op = plan_.ops[index];
    const bool first = plan_.peerSlot[index] >= 0 && inlinable(index);
    const size_t bytes = bytesOf(op);
    if (op.kind == OpKind::kSend) {
      w_.result.payloadBytes += bytes;
      if (first) w_.result.headerBytes += kHeaderBytes;
      w_.post(rank_, op.peer, first ? kHeader : op.msgId, true, {Flight::kOp, index},
              first ? bytes + kHeaderBytes : bytes);
      ++outstanding_;
      return;
    }
    if (first) {  // the payload rides on the header, received from the start
      size_t slot = static_cast<size_t>(plan_.peerSlot[index]);
      if (inlineIn_[slot])
        finishRecv(index);
      else
        inlineWaits_[slot] = true;
      return;
    }
    w_.post(op.peer, rank_, op.msgId, false, {Flight::kOp, index}, bytes);
    ++outstanding_;
  }

  void finishRecv(uint32_t index) {
    const PlanOp& op = plan_.ops[index];
    if (op.kind != OpKind::kRecv) compute(op);  // reduce or merge where it landed
    markDone(index);
  }

  // The executor's header check (executor_headers.cc), on the fields a plan carries.
  void checkHeader(int peer) {
    const Plan& theirs = *w_.job->plans[peer];
    const char* field = theirs.collective != plan_.collective ? "collective"
                        : theirs.dtype != plan_.dtype         ? "dtype"
                        : theirs.op != plan_.op               ? "op"
                        : theirs.count != plan_.count         ? "count"
                        : theirs.root != plan_.root           ? "root"
                        : theirs.algorithm != plan_.algorithm ? "algorithm"
                                                              : nullptr;
    if (field && w_.mismatch.empty())
      w_.mismatch =
          "rank " + std::to_string(rank_) + ": rank " + std::to_string(peer) + "'s header differs in " + field;
  }

  void complete(Done d) {
    if (d.what == Flight::kHeaderOut) return;
    if (d.what == Flight::kHeaderIn) {
      headerIn_[d.index] = true;
      int peer = plan_.recvPeers[d.index];
      checkHeader(peer);
      uint32_t firstOp = plan_.firstRecvOp[d.index];
      if (inlinable(firstOp)) {
        inlineIn_[d.index] = true;
        if (inlineWaits_[d.index]) finishRecv(firstOp);
      }
      // Receives that landed before the header are used now (executor: headerTaken).
      std::vector<uint32_t> held;
      held.swap(heldRecvs_);
      for (uint32_t index : held) {
        if (plan_.ops[index].peer == peer)
          finishRecv(index);
        else
          heldRecvs_.push_back(index);
      }
      return;
    }
    const auto index = static_cast<uint32_t>(d.index);
    const PlanOp& op = plan_.ops[index];
    if (op.kind == OpKind::kSend)
      markDone(index);
    else if (!op.onArrival && !headerIn_[recvSlot(op.peer)])
      heldRecvs_.push_back(index);
    else
      finishRecv(index);
  }

  const int rank_;
  const Plan& plan_;
  const ReplayOptions& o_;
  World& w_;
  std::vector<uint32_t> pending_;
  std::vector<bool> headerIn_, inlineIn_, inlineWaits_;
  std::vector<uint32_t> readyTransfers_, readyLocal_, heldRecvs_;
  size_t localHead_ = 0;
  size_t done_ = 0;
  size_t outstanding_ = 0;  // transfers posted, not yet heard back
};

// How many transfer actors fit in half of the memory available now. Their stacks have no guard
// page (replay()), so they take no memory mapping of their own: vm.max_map_count no longer
// bounds them.
size_t transferBudget() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  size_t kib = 0;
  while (in >> key >> kib >> unit && key != "MemAvailable:") kib = 0;
  return std::max<size_t>(1000, kib / 2 / (kStackKiB + 8));
}

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
  // Many short-lived transfer actors, each a few frames deep (no recursion anywhere): small
  // stacks without guard pages, which would cost two memory mappings per actor.
  sg4::Engine::set_config("contexts/stack-size:" + std::to_string(kStackKiB));
  sg4::Engine::set_config("contexts/guard-size:0");
#ifdef TSR_SIM_THREAD_CONTEXTS
  // AddressSanitizer cannot follow SimGrid's own context switches; with threads it can.
  sg4::Engine::set_config("contexts/factory:thread");
#endif
  TSR_RETURN_IF_ERROR(configure(options));
  ReplayOptions o = options;
  o.headers = options.headers && job.argumentHeaders;
  TSR_ASSIGN_OR_RETURN(auto hosts, buildPlatform(engine, platform, n / ranksPerHost, ranksPerHost));
  World w;
  w.maxInFlight = options.maxTransfersInFlight > 0 ? options.maxTransfersInFlight : transferBudget();
  w.ranks = n;
  w.pairWindow = options.pairWindow;
  w.job = &job;
  w.hostOfRank = std::move(hosts);  // job.hostOfRank[r] is r / ranksPerHost (sim_job.cc's placements)
  w.inbox.resize(n);
  for (int r = 0; r < n; ++r) w.bell.push_back(sg4::Semaphore::create(0));
  w.result.finish.assign(n, -1);
  w.opsDone.assign(n, 0);
  for (int r = 0; r < n; ++r)
    sg4::Actor::create("rank" + std::to_string(r), w.hostOfRank[r], RankReplay(r, *job.plans[r], o, w));
  engine.run();
  if (!w.tooMany.empty()) return Status(Code::kNotSupported, "replay: " + w.tooMany);
  if (!w.mismatch.empty()) return Status(Code::kMismatch, "replay: " + w.mismatch);
  for (int r = 0; r < n; ++r) {
    if (w.result.finish[r] < 0 || w.opsDone[r] != job.plans[r]->ops.size())
      return Status(Code::kInternal, "replay: rank " + std::to_string(r) + " stopped after " +
                                         std::to_string(w.opsDone[r]) + " of " +
                                         std::to_string(job.plans[r]->ops.size()) + " ops (plans deadlock)");
    w.result.seconds = std::max(w.result.seconds, w.result.finish[r]);
  }
  return w.result;
}

}  // namespace tsr::sim
