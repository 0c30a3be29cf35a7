// The bootstrap wire protocol, as pure encode/decode/verify functions (no sockets).
//
// Vocabulary. On each ring link the *connector* (rank r) dialled the *acceptor* (rank r+1).
// Handshake, all integers big-endian:
//   1. acceptor -> connector  Hello  : magic "TSRB", version, acceptor nonce Na (32 B)
//   2. connector -> acceptor  Claim  : magic, version, rank c, job id length, job id, connector
//                                      nonce Nc, HMAC(secret, "claim"|Na|job id|c|Nc)
//   3. acceptor -> connector  Answer : magic, rank a, HMAC(secret, "answer"|Nc|Na|job id|a|c)
// Both sides then derive a per-link session key K = HMAC(secret, "session"|Na|Nc|job id|c|a).
// A data *frame* is seq (u64), length (u32), payload, HMAC(K, seq|length|payload) (the payload
// starts with its kind, see bootstrap.cc: a blob, or why the sender gave up). The fixed
// labels stop one message's MAC from being replayed as another's; the fresh nonces in K stop a
// frame recorded on one link (or job) from being replayed on another; seq stops replays and
// reordering within a link.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "runtime/bootstrap/hmac.h"

namespace tsr::runtime::wire {

using Nonce = std::array<uint8_t, 32>;
using Mac = Digest;

constexpr uint32_t kMagic = 0x54535242;  // "TSRB"
constexpr uint16_t kVersion = 2;         // 2: frame payloads start with their kind
constexpr size_t kMaxJobIdBytes = 256;

constexpr size_t kHelloBytes = 4 + 2 + 32;
constexpr size_t kClaimHeadBytes = 4 + 2 + 4 + 2;  // magic, version, rank, job id length
constexpr size_t kAnswerBytes = 4 + 4 + 32;
constexpr size_t kFrameHeadBytes = 8 + 4;

std::string encodeHello(const Nonce& acceptorNonce);
Result<Nonce> decodeHello(std::string_view bytes);

struct ClaimHead {
  uint32_t rank = 0;
  uint16_t jobIdBytes = 0;
  size_t tailBytes() const { return jobIdBytes + 32 + 32; }  // job id, nonce, mac
};
struct Claim {
  uint32_t rank = 0;
  std::string jobId;
  Nonce nonce{};
  Mac mac{};
};
Result<std::string> encodeClaim(const std::string& secret, const Nonce& acceptorNonce, uint32_t rank,
                                const std::string& jobId, const Nonce& nonce);
Result<ClaimHead> decodeClaimHead(std::string_view bytes);
Claim decodeClaimTail(const ClaimHead& head, std::string_view tail);
// Ok when the claim's MAC is right for this secret and acceptor nonce.
Status verifyClaim(const std::string& secret, const Nonce& acceptorNonce, const Claim& claim);

struct Answer {
  uint32_t rank = 0;
  Mac mac{};
};
Result<std::string> encodeAnswer(const std::string& secret, const Nonce& acceptorNonce, const Nonce& connectorNonce,
                                 const std::string& jobId, uint32_t acceptorRank, uint32_t connectorRank);
Result<Answer> decodeAnswer(std::string_view bytes);
Status verifyAnswer(const std::string& secret, const Nonce& acceptorNonce, const Nonce& connectorNonce,
                    const std::string& jobId, uint32_t connectorRank, const Answer& answer);

Result<Mac> sessionKey(const std::string& secret, const Nonce& acceptorNonce, const Nonce& connectorNonce,
                       const std::string& jobId, uint32_t connectorRank, uint32_t acceptorRank);

struct FrameHead {
  uint64_t seq = 0;
  uint32_t length = 0;
};
// Head, payload and MAC in one buffer, ready to write.
Result<std::string> encodeFrame(const Mac& key, uint64_t seq, std::string_view payload);
FrameHead decodeFrameHead(std::string_view bytes);
// Ok when `mac` authenticates (seq, payload) under key.
Status verifyFrame(const Mac& key, uint64_t seq, std::string_view payload, std::string_view mac);

}  // namespace tsr::runtime::wire
