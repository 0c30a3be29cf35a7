// Communicator::shrink: the live ranks of a communicator that lost some agree on who is gone
// (shrink_agreement.h), over the control channel, which still works between live ranks after
// the data plane failed; then they bootstrap among themselves, as split does, at their
// bootstrap hosts and the ports each reserved and sent with its part of the agreement. The new
// communicator's secret is HMAC(this one's split key, "shrink" | epoch | lost set): a rank shut
// out (or one that agreed on another set) cannot join it.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "base/logging.h"
#include "base/port_reservation.h"
#include "runtime/communicator.h"
#include "runtime/progress_engine.h"
#include "runtime/shrink_agreement.h"

namespace tsr::runtime {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kShrinkAttempts = 3;
constexpr auto kShrinkResend = std::chrono::milliseconds(200);

bool isLoopback(const std::string& host) { return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0; }

std::string rankList(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

Result<Config> Communicator::recoveryConfig(const Config& base, int64_t timeoutMs) {
  Config config = base;
  TSR_RETURN_IF_ERROR(config.set("TSR_TIMEOUT_MS", std::to_string(timeoutMs)));
  const int64_t bootstrapMs =
      std::min<int64_t>(config.getInt("TSR_BOOTSTRAP_TIMEOUT_MS"), std::max<int64_t>(timeoutMs, 5000));
  TSR_RETURN_IF_ERROR(config.set("TSR_BOOTSTRAP_TIMEOUT_MS", std::to_string(bootstrapMs)));
  return config;
}

Result<std::unique_ptr<Communicator>> Communicator::shrink() {
  if (bufferMemory() != transport::MemoryType::kHost)
    return Status(Code::kInvalidArgument, "shrink: the communicator's memory type is not host (set it back to host)");
  // A survivor that dies after the agreement keeps every survivor's bootstrap from closing:
  // they all fail it, and agree again (the next epoch, alike on each), now without it.
  // A survivor can learn of that death only at its bootstrap's bound (it was connecting to the
  // dead rank) while the others learnt of it at once: the next agreement waits that much longer
  // for it before taking its silence for death.
  bool bootstrapFailed = false;
  auto made = shrinkOnce(&bootstrapFailed, std::chrono::milliseconds(0));
  for (int attempt = 1; attempt < kShrinkAttempts && bootstrapFailed; ++attempt) {
    log::get("runtime")->warn("rank {}: {}; agreeing again", rank_, made.status().message());
    auto childConfig = recoveryConfig(config_, timeoutMs_.load());
    if (!childConfig.isOk()) return childConfig.status();
    made =
        shrinkOnce(&bootstrapFailed, std::chrono::milliseconds(childConfig.value().getInt("TSR_BOOTSTRAP_TIMEOUT_MS")));
  }
  return made;
}

Result<std::unique_ptr<Communicator>> Communicator::shrinkOnce(bool* bootstrapFailed,
                                                               std::chrono::milliseconds lateBy) {
  *bootstrapFailed = false;
  const uint32_t epoch = shrinks_++;
  const auto started = Clock::now();
  const std::string me = "rank " + std::to_string(rank_);
  // Every live rank's calls end now: one blocked in a collective with a live peer that is
  // already here would otherwise wait for it until the timeout.
  revoke("(to shrink it: use the shrunk communicator)");
  engine_->watchLostPeers();
  const std::string myHost = rank_ < static_cast<int>(launchPeers_.size()) ? launchPeers_[rank_].host : "127.0.0.1";
  TSR_ASSIGN_OR_RETURN(PortReservation reservation, PortReservation::reserve(1, isLoopback(myHost)));
  ShrinkAgreement agreement(rank_, size_, epoch, static_cast<uint16_t>(reservation.ports()[0]));
  for (int peer : engine_->lostPeers()) agreement.lose(peer);
  auto tell = [&] {
    std::vector<int> live = agreement.survivors();
    live.erase(std::remove(live.begin(), live.end(), rank_), live.end());
    engine_->sendRecovery(live, encodeShrink(agreement.mine()));
  };
  tell();
  auto told = Clock::now();
  // Peers that answer nothing are lost at the timeout (after lateBy); the agreement itself gets
  // a timeout more.
  const auto timeout = std::chrono::milliseconds(timeoutMs_.load());
  const auto silentUntil = timeout + lateBy, giveUpAt = silentUntil + timeout;
  bool expired = false;
  std::vector<std::pair<int, std::string>> later;  // a later epoch's messages, kept for it
  while (!agreement.agreed()) {
    std::vector<std::pair<int, std::string>> inbox;
    {
      std::unique_lock<std::mutex> lock(recoveryMutex_);
      recoveryCv_.wait_for(lock, std::chrono::milliseconds(5), [&] { return !recoveryInbox_.empty(); });
      inbox.swap(recoveryInbox_);
    }
    bool grew = false;
    int movedOn = -1;  // a live peer already agreeing again
    for (auto& [from, body] : inbox) {
      auto message = decodeShrink(body, size_);
      if (!message.isOk()) {
        log::get("runtime")->warn("{}: shrink: from rank {}: {}", me, from, message.status().message());
      } else if (message.value().epoch > epoch) {
        const std::vector<int> live = agreement.survivors();
        if (std::find(live.begin(), live.end(), from) != live.end()) movedOn = from;
        later.emplace_back(from, std::move(body));
      } else {
        grew |= agreement.receive(from, message.value());
      }
    }
    if (movedOn >= 0 && !agreement.agreed()) {
      // That peer agreed on a smaller lost set before this rank's grew (a failure seen late),
      // failed its bootstrap and agrees again: so does this rank, with what it has lost, rather
      // than wait out the deadline for an answer that will not come at this epoch.
      {
        std::lock_guard<std::mutex> lock(recoveryMutex_);  // not held into the engine's markLost
        recoveryInbox_.insert(recoveryInbox_.begin(), later.begin(), later.end());
      }
      const std::vector<int> live = agreement.survivors();
      std::vector<int> lost;
      for (int r = 0; r < size_; ++r)
        if (std::find(live.begin(), live.end(), r) == live.end()) lost.push_back(r);
      engine_->markLost(lost);
      *bootstrapFailed = true;  // agree again (shrink's next attempt)
      return Status(Code::kPeerFailed,
                    "shrink: " + me + ": rank " + std::to_string(movedOn) +
                        " agrees again without the ranks it found lost since; lost here: " + agreement.lostText());
    }
    for (int peer : engine_->lostPeers()) grew |= agreement.lose(peer);
    const auto now = Clock::now();
    if (!expired && now - started >= silentUntil) {
      expired = true;
      grew |= agreement.expire();
    }
    // Sent again now and then while not agreed: a peer that read it during an earlier epoch's
    // agreement, or missed it, hears it again.
    if (grew || now - told >= kShrinkResend) {
      tell();
      told = now;
    }
    if (now - started >= giveUpAt && !agreement.agreed())
      return Status(Code::kTimeout, "shrink: " + me + " waited " + std::to_string(giveUpAt.count()) + " ms for ranks " +
                                        rankList(agreement.waitingFor()) + " to agree that the lost are " +
                                        agreement.lostText() +
                                        " (a failure during the shrink that they saw otherwise; call it again)");
  }
  if (!later.empty()) {
    std::lock_guard<std::mutex> lock(recoveryMutex_);
    recoveryInbox_.insert(recoveryInbox_.begin(), later.begin(), later.end());
  }
  TSR_RETURN_IF_ERROR(agreement.majority());
  const std::vector<int> survivors = agreement.survivors();
  {
    std::vector<int> lost;
    for (int r = 0; r < size_; ++r)
      if (std::find(survivors.begin(), survivors.end(), r) == survivors.end()) lost.push_back(r);
    engine_->markLost(lost);  // destroying this communicator then waits for no goodbye of theirs
  }
  const std::vector<uint16_t> ports = agreement.ports();
  const double agreedMs = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  log::get("runtime")->info("{}: shrink {}: lost {}; {} survivors agreed in {:.0f} ms", me, epoch, agreement.lostText(),
                            survivors.size(), agreedMs);

  LaunchInfo child;
  child.size = static_cast<int>(survivors.size());
  child.insecure = insecure_;
  child.source = "shrink of a communicator launched by " + launchSource_;
  TSR_ASSIGN_OR_RETURN(child.jobId, childJobId("/shrink" + std::to_string(epoch) + "/" + agreement.lostHex()));
  child.localSize = 0;
  for (int i = 0; i < child.size; ++i) {
    const int r = survivors[i];
    if (r == rank_) child.rank = i;
    PeerAddress peer;
    peer.host = r < static_cast<int>(launchPeers_.size()) ? launchPeers_[r].host : "127.0.0.1";
    peer.port = ports[i];
    child.peers.push_back(peer);
    if (hostIds_[r] != hostIds_[rank_]) continue;
    if (r < rank_) ++child.localRank;
    ++child.localSize;
  }
  TSR_ASSIGN_OR_RETURN(Digest secret,
                       hmacSha256(asView(splitKey_), {"shrink/", std::to_string(epoch), "/", agreement.lostHex()}));
  child.secret = toHex(secret.data(), secret.size());
  // The survivors' communicator keeps this one's timeout.
  TSR_ASSIGN_OR_RETURN(Config childConfig, recoveryConfig(config_, timeoutMs_.load()));
  const auto agreed = Clock::now();
  auto made = create(child, childConfig);
  log::setThreadRank(rank_);  // the child's creation named this thread after its own rank
  *bootstrapFailed = !made.isOk();
  if (!made.isOk()) {
    // The bootstrap's message numbers ranks as the survivors' communicator does.
    std::string numbering;
    for (size_t i = 0; i < survivors.size() && i < 16; ++i)
      numbering += (i ? ", " : "") + std::to_string(i) + " = old " + std::to_string(survivors[i]);
    if (survivors.size() > 16) numbering += ", ...";
    return Status(made.status().code(), "shrink: " + me + " (lost: " + agreement.lostText() + ") could not join the " +
                                            std::to_string(child.size) + " survivors: " + made.status().message() +
                                            " [ranks there are the survivors': " + numbering + "]");
  }
  handDownElastic(*made.value());
  made.value()->recovery_ = {agreedMs, std::chrono::duration<double, std::milli>(Clock::now() - agreed).count()};
  return made;
}

}  // namespace tsr::runtime
