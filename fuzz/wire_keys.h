// The job the bootstrap wire target plays (its secret, job id, ranks and nonces), shared with
// make_seeds so that its seeds carry MACs that verify.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/bootstrap/wire.h"

namespace tsr::fuzz::wire_keys {

inline const std::string kSecret = "fuzz-job-secret";
inline const std::string kJobId = "fuzz-job";
inline constexpr uint32_t kPeerRank = 3;  // the connector, left of this rank
inline constexpr uint32_t kMyRank = 4;
inline constexpr size_t kMaxBlobBytes = 1 << 16;  // BootstrapOptions::maxBlobBytes, kept small here

inline runtime::wire::Nonce nonce(uint8_t fill) {
  runtime::wire::Nonce n;
  n.fill(fill);
  return n;
}
inline runtime::wire::Nonce acceptorNonce() { return nonce(1); }
inline runtime::wire::Nonce connectorNonce() { return nonce(2); }

}  // namespace tsr::fuzz::wire_keys
