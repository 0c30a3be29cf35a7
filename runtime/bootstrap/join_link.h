// Joining a running job: how a replacement process reaches the members and is told where the
// grown communicator bootstraps (Communicator::grow and Communicator::join).
//
// Each member that calls grow listens at its own first bootstrap address (its TSR_PEERS entry,
// which tsrun gives a respawned rank again) for replacements. A replacement dials the members'
// addresses in turn, authenticates with the job's join key (HMAC of the job secret: a process
// without the secret is refused at the handshake, wire.h) and sends its request: where it will
// listen for the new communicator's bootstrap. The member holds the link until the members'
// next grow, where they agree on who joins (runtime/communicator_grow.cc) and it answers with
// the welcome: the new rank, size and every rank's bootstrap address, and the new secret
// sealed under the link's session key. A member that dies first closes the link: the
// replacement goes on to the next member.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/bootstrap/hmac.h"
#include "runtime/bootstrap/launch_env.h"

namespace tsr::runtime {

struct JoinCredentials {
  std::string key;    // the job's join key (raw bytes), derived by every rank from the job secret
  std::string jobId;  // the job's first id (the launcher's)
  int handshakeTimeoutMs = 2000;
};

// The job's join key: the same for every rank of the job and every replacement started with
// its secret, whatever communicators came between.
Result<Digest> joinKey(const std::string& jobSecret, const std::string& jobId);

// What a replacement asks for: the address it listens at for the grown communicator's
// bootstrap, and its machine identity (to count local ranks).
struct JoinRequest {
  std::string host;  // empty: the address its member sees it at
  uint16_t port = 0;
  std::string hostId;
};

class JoinerLink;  // an authenticated connection to one waiting replacement

struct PendingJoiner {
  JoinRequest request;
  std::string remote;   // its address as the member sees it ("host:port")
  Digest sessionKey{};  // the link's key: seals what only this replacement may read
  std::shared_ptr<JoinerLink> link;
  std::string host() const;  // request.host, else the host part of remote
};

// A member's door for replacements: listens at `at.peers[at.rank]` (on the address the
// bootstrap would choose, listen_address.h) on a thread of its own until destroyed.
class JoinListener {
 public:
  static Result<std::unique_ptr<JoinListener>> open(const LaunchInfo& at, JoinCredentials credentials);
  ~JoinListener();
  JoinListener(const JoinListener&) = delete;
  JoinListener& operator=(const JoinListener&) = delete;

  // The replacements authenticated and still connected, in arrival order; each taken once.
  std::vector<PendingJoiner> take();
  const std::string& address() const;

  class Impl;

 private:
  explicit JoinListener(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Sends a taken replacement its welcome (one authenticated frame), blocking at most timeoutMs.
Status sendWelcome(PendingJoiner& joiner, const std::string& welcome, int timeoutMs);

struct Welcome {
  std::string payload;
  Digest sessionKey{};
  std::string from;  // the member's address
};

// The replacement's side: dials `members` in turn until one takes its request, then waits for
// the welcome; a member that refuses, is gone or closes the link is left for the next.
// Fails (kTimeout) when no welcome came within timeoutMs, naming what each member did.
Result<Welcome> requestToJoin(const std::vector<PeerAddress>& members, const JoinCredentials& credentials,
                              const JoinRequest& mine, int timeoutMs);

// A secret for one link's other end only: XOR with HMAC(session key, label); its frame is
// authenticated, so it cannot be altered either. Sealing twice opens.
Result<Digest> sealForLink(const Digest& sessionKey, const std::string& label, const Digest& secret);

}  // namespace tsr::runtime
