#include "runtime/control_auth.h"

#include <algorithm>

namespace tsr::runtime {

namespace {

void putU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xff);
}

std::string u64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (56 - 8 * i)) & 0xff);
  return out;
}

uint64_t readU64(std::string_view bytes) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | static_cast<uint8_t>(bytes[i]);
  return v;
}

}  // namespace

Result<Digest> deriveControlKey(std::string_view secret, std::string_view jobId,
                                const std::vector<std::string>& cards) {
  // Lengths first, so that no two different inputs give the same bytes.
  std::string input;
  putU32(input, static_cast<uint32_t>(jobId.size()));
  input += jobId;
  putU32(input, static_cast<uint32_t>(cards.size()));
  for (const std::string& card : cards) {
    putU32(input, static_cast<uint32_t>(card.size()));
    input += card;
  }
  // With TSR_INSECURE=1 and no secret the key is HMAC under the empty key of what the
  // bootstrap exchanged in the clear: it keeps out a stranger who reaches a UCX port without
  // having seen the bootstrap's traffic, not one who has.
  return hmacSha256(secret, {"tsr control key v1", input});
}

ControlAuth::ControlAuth(const Digest& key, int rank, int size, uint32_t comm)
    : key_(asView(key)), rank_(rank), size_(size), comm_(comm), heard_(size > 0 ? size : 0, 0) {}

Result<Digest> ControlAuth::mac(int from, int to, std::string_view counter, std::string_view body) const {
  std::string head;
  putU32(head, comm_);
  putU32(head, static_cast<uint32_t>(from));
  putU32(head, static_cast<uint32_t>(to));
  return hmacSha256(key_, {"tsr-control", head, counter, body});
}

Result<std::string> ControlAuth::seal(int to, std::string_view body) {
  std::string counter = u64(++sent_);
  TSR_ASSIGN_OR_RETURN(Digest d, mac(rank_, to, counter, body));
  std::string out;
  out.reserve(kControlOverhead + body.size());
  out += counter;
  out += body;
  out += asView(d);
  return out;
}

Result<std::string_view> ControlAuth::open(int from, std::string_view wire) {
  if (from < 0 || from >= size_ || from == rank_) return Status(Code::kInvalidArgument, "no such peer");
  if (wire.size() < kControlOverhead)
    return Status(Code::kInvalidArgument, "too short to carry a MAC (" + std::to_string(wire.size()) + " bytes)");
  std::string_view counter = wire.substr(0, 8);
  std::string_view body = wire.substr(8, wire.size() - kControlOverhead);
  Digest got{};
  std::string_view tail = wire.substr(wire.size() - kDigestBytes);
  std::copy(tail.begin(), tail.end(), got.begin());
  TSR_ASSIGN_OR_RETURN(Digest want, mac(from, rank_, counter, body));
  if (!digestsEqual(got, want)) return Status(Code::kInvalidArgument, "wrong MAC");
  // Checked after the MAC: a forged counter must not move the window.
  uint64_t n = readU64(counter);
  if (n <= heard_[from])
    return Status(Code::kInvalidArgument,
                  "replayed (counter " + std::to_string(n) + ", already had " + std::to_string(heard_[from]) + ")");
  heard_[from] = n;
  return body;
}

}  // namespace tsr::runtime
