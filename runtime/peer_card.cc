#include "runtime/peer_card.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

namespace tsr::runtime {

namespace {
void put(std::string& out, const std::string& field) {
  uint32_t n = static_cast<uint32_t>(field.size());
  out.append(reinterpret_cast<const char*>(&n), 4);
  out += field;
}
bool take(const std::string& in, size_t& pos, std::string& field) {
  if (pos + 4 > in.size()) return false;
  uint32_t n;
  std::memcpy(&n, in.data() + pos, 4);
  pos += 4;
  if (pos + n > in.size()) return false;
  field = in.substr(pos, n);
  pos += n;
  return true;
}
}  // namespace

std::string PeerCard::encode() const {
  std::string out = "TSRC";
  put(out, transportAddress);
  put(out, hostname);
  put(out, hostId);
  put(out, std::to_string(numaNode));
  put(out, locality);
  put(out, controlNonce);
  put(out, secure);
  return out;
}

Result<PeerCard> PeerCard::decode(const std::string& bytes, int fromRank) {
  PeerCard card;
  size_t pos = 4;
  std::string numa;
  if (bytes.compare(0, 4, "TSRC") != 0 || !take(bytes, pos, card.transportAddress) ||
      !take(bytes, pos, card.hostname) || !take(bytes, pos, card.hostId) || !take(bytes, pos, numa) ||
      !take(bytes, pos, card.locality) || !take(bytes, pos, card.controlNonce) || !take(bytes, pos, card.secure) ||
      pos != bytes.size())
    return Status(Code::kBootstrap, "malformed peer card from rank " + std::to_string(fromRank));
  card.numaNode = std::atoi(numa.c_str());
  return card;
}

std::string mismatchedSecurity(const std::vector<PeerCard>& cards) {
  std::map<std::string, std::string> ranksOf;  // value -> "0, 2"
  for (size_t r = 0; r < cards.size(); ++r) {
    std::string& ranks = ranksOf[cards[r].secure];
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  }
  if (ranksOf.size() <= 1) return "";
  std::string out = "TSR_SECURE differs between ranks:";
  for (const auto& [value, ranks] : ranksOf) out += " '" + value + "' on rank(s) " + ranks + ";";
  return out + " every rank of a job must set it alike (a sealed rank cannot read an unsealed one)";
}

std::string localHostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

std::string localHostId(const std::string& testHost) {
  std::string id;
  std::ifstream in("/etc/machine-id");
  std::getline(in, id);
  return localHostname() + "/" + id + (testHost.empty() ? "" : "/test-host=" + testHost);
}

}  // namespace tsr::runtime
