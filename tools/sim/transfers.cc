#include "tools/sim/transfers.h"

#include <functional>

namespace tsr::sim {

namespace {
// The transfers' actors are a few frames deep (SimGrid runs its kernel on the main stack), so
// they get small stacks: memory, not time, bounds how many transfers a replay keeps in flight.
sg4::ActorPtr transferActor(const char* name, sg4::Host* host, std::function<void()> body) {
  return sg4::Actor::init(name, host)->set_stacksize(kTransferStackKiB)->start(std::move(body));  // in KiB
}
}  // namespace

Transfers::Transfers(const JobPlans& job, std::vector<sg4::Host*> hostOfRank, int pairWindow, size_t maxInFlight)
    : job_(job),
      ranks_(static_cast<int>(hostOfRank.size())),
      pairWindow_(pairWindow),
      maxInFlight_(maxInFlight),
      hostOfRank_(std::move(hostOfRank)),
      inbox_(static_cast<size_t>(ranks_) * kStreams) {
  for (size_t i = 0; i < inbox_.size(); ++i) bell_.push_back(sg4::Semaphore::create(0));
}

void Transfers::post(int from, int to, Stream stream, uint32_t id, bool isSend, Done done, size_t bytes) {
  const uint64_t k = key(from, to, stream, id);
  Pending& p = posted_[k];
  (isSend ? p.send : p.recv) = Side{true, done, bytes};
  if (!p.send.set || !p.recv.set) return;
  if (p.send.bytes != p.recv.bytes)
    setMismatch("rank " + std::to_string(from) + " sends " + std::to_string(p.send.bytes) + " bytes to rank " +
                std::to_string(to) + " where " + std::to_string(p.recv.bytes) + " are expected (message " +
                std::to_string(id) + ")");
  Transfer t{from, to, stream, p.send.done, p.recv.done, p.send.bytes};
  posted_.erase(k);
  ++result.messages;
  if (pairWindow_ > 0) {
    Lane& lane = lanes_[pairKey(from, to)];
    if (lane.active >= pairWindow_) {
      lane.waiting.push_back(t);
      return;
    }
    ++lane.active;
  }
  start(t);
}

bool Transfers::next(int rank, Stream stream, Done* done) {
  if (!stopped_.empty()) return false;
  bell_[slot(rank, stream)]->acquire();
  if (!stopped_.empty()) return false;
  std::deque<Done>& in = inbox_[slot(rank, stream)];
  *done = in.front();
  in.pop_front();
  return true;
}

void Transfers::stop(const std::string& why) {
  if (!stopped_.empty()) return;
  stopped_ = why;
  for (auto& bell : bell_) bell->release();  // every waiting plan returns at once
}

void Transfers::deliver(int rank, Stream stream, Done d) {
  inbox_[slot(rank, stream)].push_back(d);
  bell_[slot(rank, stream)]->release();
}

// Each transfer in flight is a pair of actors with their own stacks: past the budget
// (maxInFlight_) the replay stops with an error that says so, rather than exhaust the machine's
// memory. With a pair window the two actors then carry the pair's waiting transfers one after
// another.
//
// A message is a put on a mailbox of the run's own, taken by the receiving actor on the
// receiver's host. Not Comm::sendto: SimGrid 3.32 files every sendto in one list that it
// searches at each completion, which made large replays quadratic in the transfers in flight
// (a 2048-rank Rabenseifner of 64 MiB took 9.5 minutes).
void Transfers::start(Transfer t) {
  if (!stopped_.empty()) return;
  if (++inFlight_ > maxInFlight_) {
    stop("more than " + std::to_string(maxInFlight_) + " transfers in flight at once (rank " + std::to_string(t.from) +
         " to rank " + std::to_string(t.to) + "); each takes two actors with a " + std::to_string(kTransferStackKiB) +
         " KiB stack, bounded by half the memory available");
    return;
  }
  sg4::Mailbox* box = nullptr;
  if (freeBoxes_.empty()) {
    box = sg4::Mailbox::by_name(std::to_string(boxCount_++));
  } else {
    box = freeBoxes_.back();
    freeBoxes_.pop_back();
  }
  const bool lane = pairWindow_ > 0;
  sg4::ActorPtr receiver = transferActor("r", hostOfRank_[t.to], [box, lane] {
    do box->get<char>();
    while (lane);  // until the sender ends the run
  });
  transferActor("x", hostOfRank_[t.from], [this, t, box, receiver]() mutable {
    static char token;  // put needs a payload; only the size travels
    for (;;) {
      box->put(&token, t.bytes);
      deliver(t.from, t.stream, t.sent);
      deliver(t.to, t.stream, t.received);
      if (pairWindow_ == 0) break;
      Lane& lane = lanes_[pairKey(t.from, t.to)];
      if (lane.waiting.empty()) {
        --lane.active;
        break;
      }
      t = lane.waiting.front();
      lane.waiting.pop_front();
    }
    if (pairWindow_ > 0) receiver->kill();  // waiting in a get that no put will match
    freeBoxes_.push_back(box);              // no receiver left on it
    --inFlight_;
  });
}

}  // namespace tsr::sim
