// ProgressEngine's part in recovering from a failure (Communicator::shrink): recovery messages
// over the control channel, sealed as every control message, sent from the driving thread;
// and the set of peers known gone, which only the driving thread may read off the transport.
#include "runtime/progress_engine.h"

namespace tsr::runtime {

void ProgressEngine::sendRecovery(const std::vector<int>& peers, const std::string& body) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int peer : peers)
      if (peer >= 0 && peer < transport_.size() && peer != rank_)
        recoveryOut_.emplace_back(peer, kRecoveryPrefix + body);
    recoveryOutCount_ = recoveryOut_.size();
  }
  transport_.wake();  // an idle progress thread sleeps on the transport's events
}

bool ProgressEngine::flushRecovery() {
  std::vector<std::pair<int, std::string>> out;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    out.swap(recoveryOut_);
    recoveryOutCount_ = 0;
  }
  // Also to a peer whose endpoint failed: the send fails at once, and one that has not
  // failed yet is probed by it.
  for (const auto& [peer, payload] : out) sendControlTo(peer, payload);
  return !out.empty();
}

void ProgressEngine::noteLostPeers() {
  std::vector<int> gone;
  for (int peer = 0; peer < transport_.size(); ++peer)
    if (peer != rank_ && (!transport_.peerStatus(peer).isOk() || transport_.peerLeft(peer))) gone.push_back(peer);
  std::lock_guard<std::mutex> lock(mutex_);
  for (int peer : gone) lost_[peer] = true;
}

void ProgressEngine::markLost(const std::vector<int>& peers) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (int peer : peers)
    if (peer >= 0 && peer < static_cast<int>(lost_.size())) lost_[peer] = true;
}

std::vector<int> ProgressEngine::lostPeers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int> gone;
  for (size_t peer = 0; peer < lost_.size(); ++peer)
    if (lost_[peer]) gone.push_back(static_cast<int>(peer));
  return gone;
}

}  // namespace tsr::runtime
