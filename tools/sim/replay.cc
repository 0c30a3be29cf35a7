#include "tools/sim/replay.h"

#include <simgrid/s4u.hpp>

#include <fstream>
#include <iterator>

#include "algorithms/plan/executor.h"
#include "tools/sim/transfers.h"

namespace tsr::sim {

using algorithms::OpKind;
using algorithms::Plan;
using algorithms::PlanExecutor;
using algorithms::PlanOp;

namespace {

constexpr size_t kHeaderBytes = sizeof(algorithms::WireHeader);

bool isTransfer(OpKind k) {
  return k == OpKind::kSend || k == OpKind::kRecv || k == OpKind::kRecvReduce || k == OpKind::kRecvMerge;
}

const Plan& planOf(const JobPlans& job, Stream stream, int rank) {
  switch (stream) {
    case Stream::kBeside:
      return *job.beside[rank];
    case Stream::kBefore:
      return *job.before[rank];
    default:
      return *job.plans[rank];
  }
}

const char* streamName(Stream stream) {
  return stream == Stream::kBeside ? "beside" : stream == Stream::kBefore ? "before" : "main";
}

// Local work on the rank's core: an execution of `seconds` on the actor's host.
void charge(ReplayResult& result, double seconds) {
  if (seconds <= 0) return;
  result.computeSeconds += seconds;
  sg4::this_actor::execute(seconds * sg4::this_actor::get_host()->get_speed());
}

// One rank's executor running one of its plans.
class RankReplay {
 public:
  // `packed` is called once the plan's kLocal ops (Marsit's packing) are all done, or when it
  // stops before.
  RankReplay(int rank, Stream stream, const ReplayOptions& o, Transfers& world, std::function<void()> packed = {})
      : rank_(rank),
        stream_(stream),
        plan_(planOf(world.job(), stream, rank)),
        o_(o),
        w_(world),
        packed_(std::move(packed)),
        pending_(plan_.depCount),
        headerIn_(plan_.recvPeers.size(), !o.headers),
        inlineIn_(plan_.recvPeers.size(), false),
        inlineWaits_(plan_.recvPeers.size(), false) {}

  // Runs the plan to its end (or until the replay stops); returns the number of ops done.
  size_t run() {
    const Plan& p = plan_;
    for (const PlanOp& op : p.ops) localsLeft_ += op.kind == OpKind::kLocal;
    if (localsLeft_ == 0) signalPacked();
    if (o_.headers) {
      for (size_t i = 0; i < p.recvPeers.size(); ++i) {
        uint32_t first = p.firstRecvOp[i];
        size_t bytes = kHeaderBytes + (inlinable(first) ? bytesOf(p.ops[first]) : 0);
        w_.post(p.recvPeers[i], rank_, stream_, kHeader, false, {Flight::kHeaderIn, i}, bytes);
        ++outstanding_;
      }
      for (size_t i = 0; i < p.sendPeers.size(); ++i)
        if (!inlinable(p.firstSendOp[i])) {
          w_.post(rank_, p.sendPeers[i], stream_, kHeader, true, {Flight::kHeaderOut, i}, kHeaderBytes);
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
      Done d;
      if (!w_.next(rank_, stream_, &d)) break;
      --outstanding_;
      complete(d);
    }
    signalPacked();
    return done_;
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
    ++done_;
    if (plan_.ops[index].kind == OpKind::kLocal && --localsLeft_ == 0) signalPacked();
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
        rate = w_.job().reducesSelect ? o_.selectRate : o_.reduceRate;
        break;  // reduce, recv-reduce
    }
    if (rate <= 0 || op.count == 0) return;
    charge(static_cast<double>(bytesOf(op)) / rate);
  }

  void charge(double seconds) { sim::charge(w_.result, seconds); }

  void signalPacked() {
    if (packed_) std::exchange(packed_, nullptr)();
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
      w_.post(rank_, op.peer, stream_, first ? kHeader : op.msgId, true, {Flight::kOp, index},
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
    w_.post(op.peer, rank_, stream_, op.msgId, false, {Flight::kOp, index}, bytes);
    ++outstanding_;
  }

  void finishRecv(uint32_t index) {
    const PlanOp& op = plan_.ops[index];
    if (op.kind != OpKind::kRecv) compute(op);  // reduce or merge where it landed
    markDone(index);
  }

  // The executor's header check (executor_headers.cc), on the fields a plan carries.
  void checkHeader(int peer) {
    const Plan& theirs = planOf(w_.job(), stream_, peer);
    const char* field = theirs.collective != plan_.collective ? "collective"
                        : theirs.dtype != plan_.dtype         ? "dtype"
                        : theirs.op != plan_.op               ? "op"
                        : theirs.count != plan_.count         ? "count"
                        : theirs.root != plan_.root           ? "root"
                        : theirs.algorithm != plan_.algorithm ? "algorithm"
                                                              : nullptr;
    if (field)
      w_.setMismatch("rank " + std::to_string(rank_) + ": rank " + std::to_string(peer) + "'s header differs in " +
                     field);
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
  const Stream stream_;
  const Plan& plan_;
  const ReplayOptions& o_;
  Transfers& w_;
  std::function<void()> packed_;
  size_t localsLeft_ = 0;
  std::vector<uint32_t> pending_;
  std::vector<bool> headerIn_, inlineIn_, inlineWaits_;
  std::vector<uint32_t> readyTransfers_, readyLocal_, heldRecvs_;
  size_t localHead_ = 0;
  size_t done_ = 0;
  size_t outstanding_ = 0;  // transfers posted, not yet heard back
};

// How many transfers (each a sending and a receiving actor) fit in half of the memory
// available now. Their stacks have no guard page (replay()), so they take no memory mapping of
// their own: vm.max_map_count does not bound them.
size_t transferBudget() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  size_t kib = 0;
  while (in >> key >> kib >> unit && key != "MemAvailable:") kib = 0;
  return std::max<size_t>(1000, kib / 2 / (2 * (kTransferStackKiB + 8)));
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
  char arg0[] = "tsr-sim", arg1[] = "--log=root.thresh:warning";
#ifdef TSR_SIM_THREAD_CONTEXTS
  // AddressSanitizer cannot follow SimGrid's own context switches; with threads it can. The
  // engine picks its context factory as it starts, so this goes on its command line.
  char arg2[] = "--cfg=contexts/factory:thread";
  char* argv[] = {arg0, arg1, arg2, nullptr};
#else
  char* argv[] = {arg0, arg1, nullptr};
#endif
  int argc = static_cast<int>(std::size(argv)) - 1;
  sg4::Engine engine(&argc, argv);
  // Many short-lived transfer actors, each a few frames deep (no recursion anywhere): small
  // stacks without guard pages, which would cost two memory mappings per actor.
  sg4::Engine::set_config("contexts/stack-size:" + std::to_string(kStackKiB));
  sg4::Engine::set_config("contexts/guard-size:0");
  TSR_RETURN_IF_ERROR(configure(options));
  ReplayOptions o = options;
  o.headers = options.headers && job.argumentHeaders;
  TSR_ASSIGN_OR_RETURN(auto hosts, buildPlatform(engine, platform, n / ranksPerHost, ranksPerHost));
  const size_t budget = options.maxTransfersInFlight > 0 ? options.maxTransfersInFlight : transferBudget();
  // hosts[r] is r / ranksPerHost's host (sim_job.cc's placements)
  Transfers w(job, std::move(hosts), options.pairWindow, budget);
  w.result.finish.assign(n, -1);
  const bool beside = !job.beside.empty(), before = !job.before.empty();
  struct RankState {
    sg4::SemaphorePtr packed = sg4::Semaphore::create(0), besideDone = sg4::Semaphore::create(0);
    size_t done[kStreams] = {};
  };
  std::vector<RankState> state(n);
  auto passes = [&o](double bytes) { return o.passRate > 0 ? bytes / o.passRate : 0.0; };
  for (int r = 0; r < n; ++r) {
    RankState& st = state[r];
    // The step in the runtime's order: its passes before, the plan before, the main plan with
    // the one beside it (started once the main plan's packing is done), the passes after.
    sg4::Actor::create("rank" + std::to_string(r), w.host(r), [&, r] {
      charge(w.result, passes(job.prepareBytes));
      if (before) st.done[int(Stream::kBefore)] = RankReplay(r, Stream::kBefore, o, w).run();
      std::function<void()> packed;
      if (beside) packed = [&st] { st.packed->release(); };
      st.done[int(Stream::kMain)] = RankReplay(r, Stream::kMain, o, w, std::move(packed)).run();
      if (beside) st.besideDone->acquire();
      if (w.stopped().empty()) charge(w.result, passes(job.finishBytes));
      w.result.finish[r] = sg4::Engine::get_clock();
    });
    if (beside)
      sg4::Actor::create("beside" + std::to_string(r), w.host(r), [&, r] {
        st.packed->acquire();
        st.done[int(Stream::kBeside)] = RankReplay(r, Stream::kBeside, o, w).run();
        st.besideDone->release();
      });
  }
  engine.run();
  if (!w.mismatch().empty()) return Status(Code::kMismatch, "replay: " + w.mismatch());
  if (!w.stopped().empty()) return Status(Code::kNotSupported, "replay: " + w.stopped());
  for (int r = 0; r < n; ++r) {
    for (Stream s : {Stream::kBefore, Stream::kMain, Stream::kBeside}) {
      if ((s == Stream::kBefore && !before) || (s == Stream::kBeside && !beside)) continue;
      const size_t ops = planOf(job, s, r).ops.size(), done = state[r].done[int(s)];
      if (w.result.finish[r] < 0 || done != ops)
        return Status(Code::kInternal, "replay: rank " + std::to_string(r) + "'s " + streamName(s) +
                                           " plan stopped after " + std::to_string(done) + " of " +
                                           std::to_string(ops) + " ops (plans deadlock)");
    }
    w.result.seconds = std::max(w.result.seconds, w.result.finish[r]);
  }
  return w.result;
}

}  // namespace tsr::sim
