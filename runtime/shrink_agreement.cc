#include "runtime/shrink_agreement.h"

#include <cstdio>
#include <sstream>

namespace tsr::runtime {

namespace {

std::string toHexBits(const std::vector<bool>& bits) {
  std::string hex;
  for (size_t i = 0; i < bits.size(); i += 4) {
    int nibble = 0;
    for (size_t b = 0; b < 4 && i + b < bits.size(); ++b)
      if (bits[i + b]) nibble |= 1 << b;
    hex += "0123456789abcdef"[nibble];
  }
  return hex;
}

std::string rankList(const std::vector<int>& ranks) {
  if (ranks.empty()) return "no rank";
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

std::string encodeShrink(const ShrinkMessage& m) {
  return "shrink " + std::to_string(m.epoch) + " " + std::to_string(m.port) + " " + toHexBits(m.lost);
}

Result<ShrinkMessage> decodeShrink(const std::string& text, int size) {
  std::istringstream in(text);
  std::string word, hex;
  long long epoch = -1, port = -1;
  if (!(in >> word >> epoch >> port >> hex) || word != "shrink" || epoch < 0 || epoch > UINT32_MAX || port < 0 ||
      port > 65535 || hex.size() != static_cast<size_t>((size + 3) / 4))
    return Status(Code::kInvalidArgument, "malformed shrink message \"" + text.substr(0, 80) + "\"");
  ShrinkMessage m;
  m.epoch = static_cast<uint32_t>(epoch);
  m.port = static_cast<uint16_t>(port);
  m.lost.assign(size, false);
  for (int r = 0; r < size; ++r) {
    const char c = hex[r / 4];
    int nibble = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (nibble < 0) return Status(Code::kInvalidArgument, "malformed shrink message \"" + text.substr(0, 80) + "\"");
    m.lost[r] = (nibble >> (r % 4)) & 1;
  }
  return m;
}

ShrinkAgreement::ShrinkAgreement(int rank, int size, uint32_t epoch, uint16_t port)
    : rank_(rank), size_(size), epoch_(epoch), port_(port), lost_(size, false), latest_(size) {}

bool ShrinkAgreement::lose(int peer) {
  if (peer < 0 || peer >= size_ || peer == rank_ || lost_[peer]) return false;
  lost_[peer] = true;
  return true;
}

bool ShrinkAgreement::receive(int from, const ShrinkMessage& m) {
  if (from < 0 || from >= size_ || from == rank_ || lost_[from] || m.epoch != epoch_ || m.lost.size() != lost_.size())
    return false;
  latest_[from] = m;
  bool grew = false;
  // A peer that counts this rank lost is one this rank cannot go on with: it is lost to us.
  if (m.lost[rank_]) grew |= lose(from);
  for (int r = 0; r < size_; ++r)
    if (m.lost[r]) grew |= lose(r);
  return grew;
}

bool ShrinkAgreement::expire() {
  bool grew = false;
  for (int r : waitingFor()) grew |= lose(r);
  return grew;
}

std::vector<int> ShrinkAgreement::waitingFor() const {
  std::vector<int> waiting;
  for (int r = 0; r < size_; ++r)
    if (r != rank_ && !lost_[r] && (!latest_[r] || latest_[r]->lost != lost_)) waiting.push_back(r);
  return waiting;
}

std::vector<int> ShrinkAgreement::survivors() const {
  std::vector<int> live;
  for (int r = 0; r < size_; ++r)
    if (!lost_[r]) live.push_back(r);
  return live;
}

std::vector<uint16_t> ShrinkAgreement::ports() const {
  std::vector<uint16_t> ports;
  for (int r : survivors()) ports.push_back(r == rank_ ? port_ : latest_[r] ? latest_[r]->port : 0);
  return ports;
}

Status ShrinkAgreement::majority() const {
  const auto live = survivors();
  if (2 * live.size() > static_cast<size_t>(size_)) return Status::ok();
  std::vector<int> gone;
  for (int r = 0; r < size_; ++r)
    if (lost_[r]) gone.push_back(r);
  return Status(Code::kPeerFailed, "shrink: rank " + std::to_string(rank_) + " and the ranks it can reach (" +
                                       rankList(live) + ") are " + std::to_string(live.size()) + " of " +
                                       std::to_string(size_) + ", not a majority; the others (" + rankList(gone) +
                                       ") are lost or cut off from them. Only a majority goes on, so that the two "
                                       "sides of a partition never train apart: this side stops");
}

std::string ShrinkAgreement::lostText() const {
  std::vector<int> gone;
  for (int r = 0; r < size_; ++r)
    if (lost_[r]) gone.push_back(r);
  return rankList(gone);
}

std::string ShrinkAgreement::lostHex() const { return toHexBits(lost_); }

}  // namespace tsr::runtime
