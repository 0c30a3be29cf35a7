// The progress engine's failure handling: breaking the communicator, the abort notices and
// goodbyes peers exchange, and the watches that turn a dead, stalled or departed peer into an
// error on every rank (timeouts, bootstrap-ring neighbours, goodbyes). Runs under the drive
// lock, like the rest of a turn (progress_engine.cc).
#include <algorithm>

#include "base/logging.h"
#include "runtime/control_message.h"
#include "runtime/progress_engine.h"
#include "transport/tag.h"

namespace tsr::runtime {

using Clock = std::chrono::steady_clock;

namespace {
// A last message may still be being delivered when a peer's goodbye is read.
constexpr auto kLeftGrace = std::chrono::milliseconds(100);
}  // namespace

void ProgressEngine::breakCommunicator(const Status& reason, bool notifyPeers, FailedSeqs failed) {
  const bool mismatch = reason.code() == Code::kMismatch && failed.any();
  bool sparing;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (broken_.isOk()) {
      broken_ = reason;
      brokenAt_ = failed;
      sparing_ = mismatch;
    } else if (sparing_ && mismatch && failed.first < brokenAt_.first) {
      broken_ = reason;  // an earlier collective was mismatched too: it is the one to report
      brokenAt_ = failed;
    } else if (sparing_ && !mismatch) {
      sparing_ = false;  // a real failure now: nothing is spared any more
    }
    sparing = sparing_;
  }
  // Spared collectives still need what is in flight delivered, so pending sends are dropped
  // at close only once nothing is spared.
  if (!sparing && (reason.code() != Code::kAborted || !stop_)) transport_.abandonPendingOnClose();
  const Notified level = sparing ? Notified::kSparing : Notified::kAll;
  if (notifyPeers && notified_ < level) {
    notified_ = level;
    Status told;
    FailedSeqs at;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      told = sparing ? broken_ : reason;
      at = sparing ? brokenAt_ : failed;
    }
    sendControl(encodeControl(told, at).substr(0, kControlBodyBytes));
  }
  // Everything still pending that is not spared fails: the failed collective (and earlier
  // ones) with the reason, later ones as aborted because of it.
  for (auto it = active_.begin(); it != active_.end();) {
    auto here = it++;
    if (spared(here->submission)) continue;
    here->executor->abort(reason);
    failWhenQuiet(active_, here, pendingFailure(here->submission, reason));
  }
  std::vector<Submission> rest, kept;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& s : incoming_) (sparedLocked(s) ? kept : rest).push_back(std::move(s));
    incoming_.swap(kept);
    incomingCount_ = incoming_.size();
  }
  for (auto& s : rest) s.request->complete(pendingFailure(s, reason));
}

bool ProgressEngine::sparedLocked(const Submission& s) const {
  return sparing_ && static_cast<int64_t>(s.seq) + s.seqSpan - 1 < brokenAt_.first;
}

bool ProgressEngine::spared(const Submission& s) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sparedLocked(s);
}

Status ProgressEngine::pendingFailure(const Submission& s, const Status& reason) const {
  int64_t failedSeq;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failedSeq = brokenAt_.last;
  }
  if (failedSeq < 0 || static_cast<int64_t>(s.seq) <= failedSeq || reason.code() == Code::kRevoked) return reason;
  return Status(Code::kAborted, "communicator is unusable after an earlier error: " + reason.toString());
}

void ProgressEngine::sendControl(const std::string& payload, bool toLeftPeers) {
  for (int peer = 0; peer < transport_.size(); ++peer) {
    if (peer == transport_.rank()) continue;
    if (toLeftPeers ? !transport_.peerLeft(peer) : !transport_.peerStatus(peer).isOk()) continue;
    sendControlTo(peer, payload);
  }
}

void ProgressEngine::sendControlTo(int peer, const std::string& payload) {
  // Sealed for this peer: a receiver acts only on what carries the job's MAC.
  auto sealed = controlAuth_.seal(peer, payload);
  if (!sealed.isOk()) {
    log::get("runtime")->error("cannot seal a control message: {}", sealed.status().toString());
    return;
  }
  controlSends_.emplace_back();
  ControlSend& cs = controlSends_.back();
  cs.payload = sealed.take();
  Status sent = transport_.send(peer, transport::makeControlTag(transport_.rank(), options_.comm), cs.payload.data(),
                                cs.payload.size(), transport::MemoryType::kHost, &cs.completion);
  if (!sent.isOk()) controlSends_.pop_back();  // nothing in flight to wait for
}

void ProgressEngine::sayGoodbye() { sendControl(kGoodbye); }

bool ProgressEngine::pollControl() {
  if (!controlRecv_.done) return false;
  int from = transport::tagSource(controlRecv_.tag);  // claimed: anyone may write any tag
  Result<std::string_view> body = Status(Code::kTransport, "not received");
  if (controlRecv_.status.isOk()) {
    body = controlAuth_.open(from, std::string_view(controlBuffer_.data(), controlRecv_.bytes));
    if (!body.isOk()) dropControl(from, body.status());
  }
  const size_t prefix = sizeof(kRecoveryPrefix) - 1;
  if (body.isOk() && body.value() == kGoodbye) {
    transport_.markPeerLeft(from);
    left_.push_back({from, Clock::now()});
  } else if (body.isOk() && body.value().substr(0, prefix) == kRecoveryPrefix) {
    if (options_.onRecovery) options_.onRecovery(from, std::string(body.value().substr(prefix)));
  } else if (body.isOk()) {
    FailedSeqs failed;
    Status reason = decodeControl(body.value().data(), body.value().size(), from, &failed);
    // Every peer relays the notice: only the first one is news.
    if (health().isOk())
      log::get("runtime")->error("abort notice: {}", reason.toString());
    else
      log::get("runtime")->debug("abort notice (already failed): {}", reason.toString());
    // Relay it: this rank will now fail and leave, and a peer that waits on it must hear the
    // root cause before it sees this rank's endpoint go (seen: "rank 0 has destroyed its
    // communicator" instead of the mismatch rank 2 had reported).
    breakCommunicator(reason, true, failed);
  }
  postControlRecv();  // also while shutting down, until the receive is cancelled
  return true;
}

void ProgressEngine::dropControl(int from, const Status& why) {
  uint64_t heldBack = 0;
  if (!droppedControlLog_.allow(Clock::now(), &heldBack)) return;
  log::get("runtime")->warn(
      "rank {}: dropped a control message that claims to come from rank {}: {} (forged, "
      "replayed or from another communicator){}",
      transport_.rank(), from, why.message(),
      heldBack ? " (" + std::to_string(heldBack) + " more not logged)" : std::string());
}

void ProgressEngine::failWaitsOnLeftPeers(Clock::time_point now) {
  // A peer's messages come before its goodbye on the same endpoint, so what a pending
  // collective still waits for from a peer that left will never come. (A short grace covers
  // a last message still being delivered when the goodbye was read.)
  for (auto& a : active_) {
    int peer = a.executor->waitingOn();
    auto it = std::find_if(left_.begin(), left_.end(), [&](const auto& l) { return l.first == peer; });
    if (it == left_.end() || now - it->second < kLeftGrace) continue;
    Status st(Code::kPeerFailed, peerName(peer) + " destroyed its communicator while rank " +
                                     std::to_string(transport_.rank()) + " waited for it in " + label(a));
    a.executor->abort(st);
    finish(a, st);
    return;  // finish() may have cleared the list; the next turn looks again
  }
}

void ProgressEngine::watchNeighbours(Clock::time_point now) {
  // A neighbour silent for half the longest pending call's timeout (1 to 30 s) is taken for
  // stopped: named before that timeout would blame whichever peer this rank waits on. From the
  // calls themselves, so a timeout set after creation (or per call) counts.
  int longest = 0;
  for (const Active& a : active_)
    longest = std::max(longest, a.submission.timeoutMs > 0 ? a.submission.timeoutMs : options_.timeoutMs);
  const auto silenceLimit = std::chrono::milliseconds(longest > 0 ? std::clamp(longest / 2, 1000, 30000) : 0);
  auto event = neighbours_.poll(now, silenceLimit);
  if (!event) return;
  Status st = event->kind == NeighbourWatch::Event::kDied
                  ? Status(Code::kPeerFailed, peerName(event->peer) + " died: its bootstrap connection to rank " +
                                                  std::to_string(transport_.rank()) + " closed without a goodbye")
                  : Status(Code::kTimeout,
                           peerName(event->peer) + " stopped responding: rank " + std::to_string(transport_.rank()) +
                               " has had no heartbeat from it for " + std::to_string(event->silentFor.count()) + " ms");
  log::get("runtime")->error("{}", st.toString());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (event->peer >= 0 && event->peer < static_cast<int>(lost_.size())) lost_[event->peer] = true;
  }
  breakCommunicator(st, true);
}

void ProgressEngine::watchLinkRates(Clock::time_point now) {
  if (!slowLinks_.due(now)) return;
  for (const SlowLinkWatch::Slow& s : slowLinks_.judge(now, transport_.sendTimes()))
    log::get("runtime")->warn(
        "rank {}: the link to {} is slow: sends to it ran at {:.1f} MB/s ({:.1f} MB in {:.2f} s "
        "of sending), under a quarter of the {:.1f} MB/s expected of it (the rate measured between "
        "hosts when the communicator was created, shared by this host's ranks; a congested or "
        "degraded link, or a slow peer; the collectives go on at its pace)",
        transport_.rank(), peerName(s.peer), s.bytesPerSecond / 1e6, s.bytes / 1e6, s.busySeconds, s.expected / 1e6);
}

void ProgressEngine::checkTimeouts(Clock::time_point now) {
  for (auto it = active_.begin(); it != active_.end();) {
    auto next = std::next(it);
    if (now >= it->deadline) {
      int peer = it->executor->waitingOn();
      int timeoutMs = it->submission.timeoutMs > 0 ? it->submission.timeoutMs : options_.timeoutMs;
      Status st(Code::kTimeout, "rank " + std::to_string(transport_.rank()) + ": " + label(*it) + " timed out after " +
                                    std::to_string(timeoutMs) + " ms" +
                                    (peer >= 0 ? " waiting for " + peerName(peer) : std::string()));
      it->executor->abort(st);
      finish(*it, st);
      return;  // finish() may have cleared the list
    }
    it = next;
  }
}

}  // namespace tsr::runtime
