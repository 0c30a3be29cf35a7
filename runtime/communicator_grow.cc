// Communicator::grow and Communicator::join: a replacement process joins a running job.
//
// The members call grow() together, at a point of their choosing (between training steps, as
// collectives are called). Each takes the replacements that knocked at its door since the last
// grow (join_link.h) and they all-gather how many: none, and grow ends there (one 8-byte
// all-gather). Otherwise they all-gather each member's reserved bootstrap port and its
// replacements' requests, so every member builds the same launch: the members first, in their
// order, then the replacements, by member and arrival. Each member then sends its replacements
// their welcome (their rank, the size, every address, and the new communicator's secret sealed
// for that link alone) and everyone bootstraps the grown communicator, as split does. Its
// secret is HMAC(this one's split key, "grow" | number): only members derive it, so a rank
// shrunk out cannot come back through a grow.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>
#include <sstream>

#include "base/logging.h"
#include "base/port_reservation.h"
#include "runtime/bootstrap/job_secret.h"
#include "runtime/bootstrap/join_link.h"
#include "runtime/communicator.h"
#include "runtime/peer_card.h"

namespace tsr::runtime {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kRecordWords = 32;  // a replacement's request in the all-gather: 256 bytes
constexpr char kSealLabel[] = "grow-secret";

bool isLoopback(const std::string& host) { return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0; }

Status wait(Result<RequestPtr> posted) { return posted.isOk() ? posted.value()->wait() : posted.status(); }

// The welcome: "rank size localRank localSize timeoutMs\njobId\nsealed secret (hex)\n" then
// "host port hostId" per rank of the grown communicator.
struct WelcomeText {
  LaunchInfo launch;
  int timeoutMs = 0;
  std::string sealedHex;
};

std::string encodeWelcome(const WelcomeText& w) {
  std::ostringstream out;
  out << w.launch.rank << ' ' << w.launch.size << ' ' << w.launch.localRank << ' ' << w.launch.localSize << ' '
      << w.timeoutMs << '\n'
      << w.launch.jobId << '\n'
      << w.sealedHex << '\n';
  for (const auto& p : w.launch.peers) out << p.host << ' ' << p.port << '\n';
  return out.str();
}

Result<WelcomeText> decodeWelcome(const std::string& text) {
  std::istringstream in(text);
  WelcomeText w;
  in >> w.launch.rank >> w.launch.size >> w.launch.localRank >> w.launch.localSize >> w.timeoutMs;
  in.ignore(1);
  std::getline(in, w.launch.jobId);
  std::getline(in, w.sealedHex);
  for (int i = 0; in && i < w.launch.size && i < 1 << 20; ++i) {
    PeerAddress p;
    in >> p.host >> p.port;
    w.launch.peers.push_back(p);
  }
  const auto& l = w.launch;
  if (!in || l.size < 2 || l.rank < 0 || l.rank >= l.size || static_cast<int>(l.peers.size()) != l.size ||
      w.sealedHex.size() != 2 * kDigestBytes || w.timeoutMs <= 0)
    return Status(Code::kBootstrap, "join: the welcome is malformed: '" + text.substr(0, 200) + "'");
  return w;
}

// The member's reservation and its replacements' requests, as the all-gather's words.
void packRecord(const PendingJoiner& j, int64_t* words) {
  const std::string text = j.host() + "\n" + std::to_string(j.request.port) + "\n" + j.request.hostId;
  char bytes[kRecordWords * 8] = {};
  std::memcpy(bytes, text.data(), std::min(text.size(), sizeof(bytes) - 1));
  std::memcpy(words, bytes, sizeof(bytes));
}

JoinRequest unpackRecord(const int64_t* words) {
  char bytes[kRecordWords * 8];
  std::memcpy(bytes, words, sizeof(bytes));
  bytes[sizeof(bytes) - 1] = '\0';
  std::istringstream in{std::string(bytes)};
  JoinRequest r;
  std::string port;
  std::getline(in, r.host);
  std::getline(in, port);
  std::getline(in, r.hostId);
  r.port = static_cast<uint16_t>(std::atoi(port.c_str()));
  return r;
}

Result<Digest> digestFromHex(const std::string& hex) {
  Digest d{};
  auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  for (size_t i = 0; i < d.size(); ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Status(Code::kBootstrap, "join: the welcome's sealed secret is not hex");
    d[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return d;
}

}  // namespace

Status Communicator::openJoinDoor() {
  std::lock_guard<std::mutex> lock(joinDoor_->mutex);
  if (joinDoor_->listener) return Status::ok();
  JoinCredentials credentials{joinKey_, rootJobId_};
  TSR_ASSIGN_OR_RETURN(auto listener, JoinListener::open(rootLaunch_, credentials));
  joinDoor_->listener = std::move(listener);
  log::get("runtime")->info("rank {}: replacements may join at {}", rank_, joinDoor_->listener->address());
  return Status::ok();
}

void Communicator::handDownElastic(Communicator& child) const {
  child.joinKey_ = joinKey_;
  child.rootJobId_ = rootJobId_;
  child.rootLaunch_ = rootLaunch_;
  child.joinDoor_ = joinDoor_;
}

Result<std::unique_ptr<Communicator>> Communicator::grow() {
  if (bufferMemory() != transport::MemoryType::kHost)
    return Status(Code::kInvalidArgument, "grow: the communicator's memory type is not host (set it back to host)");
  const std::string me = "grow: rank " + std::to_string(rank_);
  // A revoked or broken communicator (the one a shrink replaced) grows nothing: said before
  // the door opens or a waiting replacement is taken, which its successor is to let in.
  if (Status h = health(); !h.isOk()) return Status(h.code(), me + ": " + h.message());
  // Collective whatever happens here: a door that cannot open (its port taken) is said, this
  // member brings nobody, and the next grow tries again.
  std::vector<PendingJoiner> joiners;
  if (Status door = openJoinDoor(); !door.isOk()) {
    log::get("runtime")->warn("{}: no door for replacements: {}", me, door.message());
  } else {
    std::lock_guard<std::mutex> lock(joinDoor_->mutex);
    joiners = joinDoor_->listener->take();
  }
  const uint32_t number = grows_++;
  const int64_t mine = static_cast<int64_t>(joiners.size());
  std::vector<int64_t> counts(size_);
  if (Status s = wait(allgather(&mine, counts.data(), 1, DataType::kI64)); !s.isOk())
    return Status(s.code(), me + ": " + s.message());
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  if (total == 0) return std::unique_ptr<Communicator>();

  const auto started = Clock::now();
  const std::string myHost =
      rank_ < static_cast<int>(launchPeers_.size()) ? launchPeers_[rank_].host : std::string("127.0.0.1");
  TSR_ASSIGN_OR_RETURN(PortReservation reservation, PortReservation::reserve(1, isLoopback(myHost)));
  const size_t words = 1 + static_cast<size_t>(*std::max_element(counts.begin(), counts.end())) * kRecordWords;
  std::vector<int64_t> record(words, 0), records(words * size_);
  record[0] = reservation.ports()[0];
  for (size_t j = 0; j < joiners.size(); ++j) packRecord(joiners[j], &record[1 + j * kRecordWords]);
  if (Status s = wait(allgather(record.data(), records.data(), words, DataType::kI64)); !s.isOk())
    return Status(s.code(), me + ": " + s.message());

  // Everyone's launch of the grown communicator: the members, then the replacements.
  LaunchInfo child;
  child.size = size_ + static_cast<int>(total);
  child.insecure = insecure_;
  child.source = "grow of a communicator launched by " + launchSource_;
  TSR_ASSIGN_OR_RETURN(child.jobId, childJobId("/grow" + std::to_string(number)));
  std::vector<std::string> ids;
  for (int r = 0; r < size_; ++r) {
    const std::string host = r < static_cast<int>(launchPeers_.size()) ? launchPeers_[r].host : "127.0.0.1";
    child.peers.push_back({host, static_cast<uint16_t>(records[r * words])});
    ids.push_back(hostIds_[r]);
  }
  for (int r = 0; r < size_; ++r)
    for (int64_t j = 0; j < counts[r]; ++j) {
      JoinRequest req = unpackRecord(&records[r * words + 1 + j * kRecordWords]);
      child.peers.push_back({req.host, req.port});
      ids.push_back(req.hostId);
    }
  auto localOf = [&](int rank, LaunchInfo& l) {
    l.localRank = static_cast<int>(std::count(ids.begin(), ids.begin() + rank, ids[rank]));
    l.localSize = static_cast<int>(std::count(ids.begin(), ids.end(), ids[rank]));
  };
  child.rank = rank_;
  localOf(rank_, child);
  TSR_ASSIGN_OR_RETURN(Digest secret, hmacSha256(asView(splitKey_), {"grow/", std::to_string(number)}));
  child.secret = toHex(secret.data(), secret.size());
  const int64_t timeoutMs = timeoutMs_.load();
  TSR_ASSIGN_OR_RETURN(Config childConfig, recoveryConfig(config_, timeoutMs));
  const int bootstrapMs = static_cast<int>(childConfig.getInt("TSR_BOOTSTRAP_TIMEOUT_MS"));

  // This member's replacements: their ranks follow those of the members before it.
  int next = size_ + static_cast<int>(std::accumulate(counts.begin(), counts.begin() + rank_, int64_t{0}));
  for (auto& joiner : joiners) {
    WelcomeText w;
    w.launch = child;
    w.launch.rank = next++;
    localOf(w.launch.rank, w.launch);
    w.timeoutMs = static_cast<int>(timeoutMs);
    TSR_ASSIGN_OR_RETURN(Digest sealed, sealForLink(joiner.sessionKey, kSealLabel, secret));
    w.sealedHex = toHex(sealed.data(), sealed.size());
    // One that cannot be told fails the bootstrap for all, within bootstrapMs: grow says so.
    if (Status s = sendWelcome(joiner, encodeWelcome(w), bootstrapMs); !s.isOk())
      log::get("runtime")->warn("{}: the replacement from {}: {}", me, joiner.remote, s.message());
  }
  log::get("runtime")->info("{}: grow {}: {} replacement(s) join the {} members", me, number, total, size_);
  const auto agreed = Clock::now();
  auto made = create(child, childConfig);
  log::setThreadRank(rank_);  // the child's creation named this thread after its own rank
  if (!made.isOk())
    return Status(made.status().code(),
                  me + " could not bootstrap the " + std::to_string(child.size) +
                      " ranks with the replacement(s) (this communicator is still usable unless a member failed: "
                      "then shrink it): " +
                      made.status().message());
  handDownElastic(*made.value());
  made.value()->recovery_ = {std::chrono::duration<double, std::milli>(agreed - started).count(),
                             std::chrono::duration<double, std::milli>(Clock::now() - agreed).count()};
  log::get("runtime")->info("{}: grown to {} ranks in {:.0f} + {:.0f} ms", me, child.size,
                            made.value()->recovery_.agreementMs, made.value()->recovery_.bootstrapMs);
  return made;
}

Result<std::unique_ptr<Communicator>> Communicator::join(const LaunchInfo& launch, const Config& config) {
  if (launch.size < 2 || launch.rank < 0 || launch.rank >= static_cast<int>(launch.peers.size()))
    return Status(Code::kInvalidArgument, "join: the launch names no members (rank " + std::to_string(launch.rank) +
                                              " of " + std::to_string(launch.size) + ", " +
                                              std::to_string(launch.peers.size()) + " addresses)");
  TSR_RETURN_IF_ERROR(checkJobSecret(launch.secret, launch.insecure, launch.size));
  TSR_ASSIGN_OR_RETURN(Digest key, joinKey(launch.secret, launch.jobId));
  JoinCredentials credentials{std::string(asView(key)), launch.jobId};
  std::vector<PeerAddress> members;
  for (int r = 0; r < launch.size; ++r)
    if (r != launch.rank) members.push_back(launch.peers[r]);
  const std::string myHost = launch.peers[launch.rank].host;
  TSR_ASSIGN_OR_RETURN(PortReservation reservation, PortReservation::reserve(1, isLoopback(myHost)));
  JoinRequest request{myHost, reservation.ports()[0], localHostId(config.get("TSR_TEST_HOST_ID"))};
  const auto asked = Clock::now();
  TSR_ASSIGN_OR_RETURN(Welcome welcome, requestToJoin(members, credentials, request, config.bootstrapTimeoutMs()));
  TSR_ASSIGN_OR_RETURN(WelcomeText w, decodeWelcome(welcome.payload));
  TSR_ASSIGN_OR_RETURN(Digest sealed, digestFromHex(w.sealedHex));
  TSR_ASSIGN_OR_RETURN(Digest secret, sealForLink(welcome.sessionKey, kSealLabel, sealed));
  LaunchInfo child = w.launch;
  child.secret = toHex(secret.data(), secret.size());
  child.insecure = launch.insecure;
  child.source = "join of a job launched by " + launch.source;
  TSR_ASSIGN_OR_RETURN(Config childConfig, recoveryConfig(config, w.timeoutMs));
  const auto welcomed = Clock::now();
  auto made = create(child, childConfig);
  if (!made.isOk())
    return Status(made.status().code(), "join: let in by " + welcome.from + " as rank " + std::to_string(child.rank) +
                                            " of " + std::to_string(child.size) + ", but " + made.status().message());
  Communicator& joined = *made.value();
  joined.joinKey_ = credentials.key;
  joined.rootJobId_ = launch.jobId;
  joined.rootLaunch_ = launch;
  joined.rootLaunch_.secret.clear();
  joined.recovery_ = {std::chrono::duration<double, std::milli>(welcomed - asked).count(),
                      std::chrono::duration<double, std::milli>(Clock::now() - welcomed).count()};
  return made;
}

Result<std::unique_ptr<Communicator>> Communicator::joinFromEnvironment() {
  EnvMap env = processEnvironment();
  TSR_ASSIGN_OR_RETURN(Config config, Config::fromEnvironment(env));
  TSR_ASSIGN_OR_RETURN(LaunchInfo launch, launchInfoFromEnv(env));
  return join(launch, config);
}

}  // namespace tsr::runtime
