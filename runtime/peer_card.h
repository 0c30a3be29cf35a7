// PeerCard: what each rank tells every other rank at bootstrap (its UCX worker address, host
// name and host id), and its byte encoding for the bootstrap all-gather.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace tsr::runtime {

struct PeerCard {
  std::string transportAddress;
  std::string hostname;
  std::string hostId;    // equal on ranks that share a machine (and its network namespace)
  int numaNode = -1;     // where the rank works (topology), for the ring order
  std::string locality;  // its GPU's (else NIC's) PCI locality key, for the ring order
  // Fresh random bytes: they make this communicator's control key its own (control_auth.h).
  std::string controlNonce;
  // TSR_SECURE: a sealed rank and an unsealed one could not read each other's messages, so
  // the ranks compare it at creation (mismatchedSecurity).
  std::string secure;

  std::string encode() const;
  static Result<PeerCard> decode(const std::string& bytes, int fromRank);
};

// Why the cards' TSR_SECURE values differ ("TSR_SECURE differs between ranks: 'encrypt' on
// rank(s) 0, 'off' on rank(s) 1, 2"), or empty when every card has the same.
std::string mismatchedSecurity(const std::vector<PeerCard>& cards);

// This machine's card fields: hostname, and hostname + machine-id as the host id (network
// namespaces on one machine have their own hostnames, so they count as separate hosts).
// A non-empty testHost (TSR_TEST_HOST_ID, for tests) is appended to the id, so ranks on one
// machine with different values count as separate hosts.
std::string localHostname();
std::string localHostId(const std::string& testHost = "");

}  // namespace tsr::runtime
