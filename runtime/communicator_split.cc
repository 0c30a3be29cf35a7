// Communicator::split: new communicators from an existing one's ranks, with nothing asked of
// a launcher or a store. Every rank reserves a bootstrap port (when it has a color) and
// all-gathers {color, key, port} over this communicator; the ranks of one color then
// bootstrap among themselves at their parent's bootstrap hosts and the reserved ports. The
// child's secret is HMAC(the parent's split key, split number | color), so only members of the
// parent can join it, and a child of one split never accepts a rank of another.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/logging.h"
#include "base/port_reservation.h"
#include "runtime/communicator.h"

namespace tsr::runtime {
namespace {

constexpr int kFields = 3;  // color, key, port

bool isLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

// Readable ids up to 128 bytes; past that the parent's first 64 bytes (the launcher's id, as a
// rule), "~" and 128 bits of a SHA-256 of the whole id: at most 97 bytes, well within the
// bootstrap's 256, after any number of shrinks (one hex digit per 4 ranks each), grows and
// splits, and as distinct as the whole ids.
Result<std::string> Communicator::childJobId(const std::string& suffix) const {
  constexpr size_t kReadable = 128, kKept = 64, kHashBytes = 16;
  std::string whole = jobId_ + suffix;
  if (whole.size() <= kReadable) return whole;
  TSR_ASSIGN_OR_RETURN(Digest digest, hmacSha256("tsr-job-id", {whole}));
  return jobId_.substr(0, kKept) + "~" + toHex(digest.data(), kHashBytes);
}

Result<std::unique_ptr<Communicator>> Communicator::split(int color, int key) {
  if (bufferMemory() != transport::MemoryType::kHost)
    return Status(Code::kInvalidArgument,
                  "split: the communicator's memory type is not host (set it back to host "
                  "for the split: the members' records travel in host memory)");
  const uint32_t splitNumber = splits_++;
  const std::string myHost =
      rank_ < static_cast<int>(launchPeers_.size()) ? launchPeers_[rank_].host : std::string("127.0.0.1");
  // Held until the child's bootstrap listens on it (the acceptor binds through it).
  PortReservation reservation;
  if (color >= 0 && size_ > 1) {
    TSR_ASSIGN_OR_RETURN(reservation, PortReservation::reserve(1, isLoopbackHost(myHost)));
  }
  std::array<int64_t, kFields> mine{color < 0 ? -1 : color, key,
                                    reservation.ports().empty() ? 0 : reservation.ports()[0]};
  std::vector<int64_t> all(static_cast<size_t>(kFields) * size_);
  TSR_ASSIGN_OR_RETURN(RequestPtr gathered, allgather(mine.data(), all.data(), kFields, DataType::kI64));
  Status st = gathered->wait();
  if (!st.isOk()) return Status(st.code(), "split (color " + std::to_string(color) + "): " + st.message());
  if (color < 0) return std::unique_ptr<Communicator>();

  // The members, ordered by key, then by their rank here.
  std::vector<int> members;
  for (int r = 0; r < size_; ++r)
    if (all[kFields * r] == color) members.push_back(r);
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return all[kFields * a + 1] < all[kFields * b + 1]; });

  LaunchInfo child;
  child.size = static_cast<int>(members.size());
  child.insecure = insecure_;
  child.source = "split of a communicator launched by " + launchSource_;
  TSR_ASSIGN_OR_RETURN(child.jobId, childJobId("/split" + std::to_string(splitNumber) + "/" + std::to_string(color)));
  for (int i = 0; i < child.size; ++i) {
    const int r = members[i];
    if (r == rank_) child.rank = i;
    PeerAddress peer;
    peer.host = r < static_cast<int>(launchPeers_.size()) ? launchPeers_[r].host : "127.0.0.1";
    peer.port = static_cast<uint16_t>(all[kFields * r + 2]);
    child.peers.push_back(peer);
  }
  // Local rank and size among the members on this rank's machine.
  child.localSize = 0;
  for (int i = 0; i < child.size; ++i) {
    if (hostIds_[members[i]] != hostIds_[rank_]) continue;
    if (i < child.rank) ++child.localRank;
    ++child.localSize;
  }
  TSR_ASSIGN_OR_RETURN(Digest secret,
                       hmacSha256(asView(splitKey_), {std::to_string(splitNumber), "/", std::to_string(color)}));
  child.secret = toHex(secret.data(), secret.size());
  log::get("runtime")->debug("rank {}: split {} color {} key {}: rank {} of {}", rank_, splitNumber, color, key,
                             child.rank, child.size);
  auto made = create(child, config_);
  log::setThreadRank(rank_);  // the child's creation named this thread after its own rank
  if (!made.isOk())
    return Status(made.status().code(), "split (color " + std::to_string(color) + ", rank " +
                                            std::to_string(child.rank) + " of " + std::to_string(child.size) +
                                            "): " + made.status().message());
  handDownElastic(*made.value());
  return made;
}

}  // namespace tsr::runtime
