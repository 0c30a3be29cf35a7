#include "runtime/bootstrap/wire.h"

#include <cstring>

namespace tsr::runtime::wire {

namespace {

void putU16(std::string& s, uint16_t v) {
  s += static_cast<char>(v >> 8);
  s += static_cast<char>(v & 0xff);
}
void putU32(std::string& s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s += static_cast<char>((v >> shift) & 0xff);
}
void putU64(std::string& s, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) s += static_cast<char>((v >> shift) & 0xff);
}
uint64_t getBE(std::string_view s, size_t at, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(s[at + i]);
  return v;
}
std::string u32Bytes(uint32_t v) {
  std::string s;
  putU32(s, v);
  return s;
}
std::string_view view(const Nonce& n) { return {reinterpret_cast<const char*>(n.data()), n.size()}; }
template <typename A>
void copyInto(A& out, std::string_view s, size_t at) {
  std::memcpy(out.data(), s.data() + at, out.size());
}

Status checkMagic(std::string_view bytes, const char* what) {
  uint32_t magic = static_cast<uint32_t>(getBE(bytes, 0, 4));
  if (magic != kMagic)
    return Status(Code::kBootstrap, std::string("not a Tessera bootstrap ") + what + " (first bytes 0x" +
                                        toHex(reinterpret_cast<const uint8_t*>(bytes.data()), 4) + ")");
  return Status::ok();
}

Status checkVersion(std::string_view bytes) {
  uint16_t version = static_cast<uint16_t>(getBE(bytes, 4, 2));
  if (version != kVersion)
    return Status(Code::kBootstrap,
                  "bootstrap protocol version " + std::to_string(version) + ", expected " + std::to_string(kVersion));
  return Status::ok();
}

std::string jobIdField(const std::string& jobId) {
  std::string s;
  putU16(s, static_cast<uint16_t>(jobId.size()));
  return s + jobId;
}

Result<Mac> claimMac(const std::string& secret, const Nonce& na, const std::string& jobId, uint32_t rank,
                     const Nonce& nc) {
  return hmacSha256(secret, {"tsr-claim", view(na), jobIdField(jobId), u32Bytes(rank), view(nc)});
}

Result<Mac> answerMac(const std::string& secret, const Nonce& na, const Nonce& nc, const std::string& jobId, uint32_t a,
                      uint32_t c) {
  return hmacSha256(secret, {"tsr-answer", view(nc), view(na), jobIdField(jobId), u32Bytes(a), u32Bytes(c)});
}

Result<Mac> frameMac(const Mac& key, uint64_t seq, std::string_view payload) {
  std::string head;
  putU64(head, seq);
  putU32(head, static_cast<uint32_t>(payload.size()));
  return hmacSha256(asView(key), {head, payload});
}

}  // namespace

std::string encodeHello(const Nonce& acceptorNonce) {
  std::string s;
  putU32(s, kMagic);
  putU16(s, kVersion);
  return s + std::string(view(acceptorNonce));
}

Result<Nonce> decodeHello(std::string_view bytes) {
  if (bytes.size() != kHelloBytes) return Status(Code::kInternal, "hello has the wrong size");
  TSR_RETURN_IF_ERROR(checkMagic(bytes, "greeting"));
  TSR_RETURN_IF_ERROR(checkVersion(bytes));
  Nonce n{};
  copyInto(n, bytes, 6);
  return n;
}

Result<std::string> encodeClaim(const std::string& secret, const Nonce& acceptorNonce, uint32_t rank,
                                const std::string& jobId, const Nonce& nonce) {
  if (jobId.size() > kMaxJobIdBytes)
    return Status(Code::kInvalidArgument,
                  "job id '" + jobId + "' is longer than " + std::to_string(kMaxJobIdBytes) + " bytes");
  TSR_ASSIGN_OR_RETURN(Mac mac, claimMac(secret, acceptorNonce, jobId, rank, nonce));
  std::string s;
  putU32(s, kMagic);
  putU16(s, kVersion);
  putU32(s, rank);
  s += jobIdField(jobId);
  s += view(nonce);
  s += asView(mac);
  return s;
}

Result<ClaimHead> decodeClaimHead(std::string_view bytes) {
  if (bytes.size() != kClaimHeadBytes) return Status(Code::kInternal, "claim head has the wrong size");
  TSR_RETURN_IF_ERROR(checkMagic(bytes, "claim"));
  TSR_RETURN_IF_ERROR(checkVersion(bytes));
  ClaimHead head;
  head.rank = static_cast<uint32_t>(getBE(bytes, 6, 4));
  head.jobIdBytes = static_cast<uint16_t>(getBE(bytes, 10, 2));
  if (head.jobIdBytes > kMaxJobIdBytes)
    return Status(Code::kBootstrap, "claimed job id length " + std::to_string(head.jobIdBytes) + " exceeds " +
                                        std::to_string(kMaxJobIdBytes));
  return head;
}

Claim decodeClaimTail(const ClaimHead& head, std::string_view tail) {
  Claim claim;
  claim.rank = head.rank;
  claim.jobId = std::string(tail.substr(0, head.jobIdBytes));
  copyInto(claim.nonce, tail, head.jobIdBytes);
  copyInto(claim.mac, tail, head.jobIdBytes + 32);
  return claim;
}

Status verifyClaim(const std::string& secret, const Nonce& acceptorNonce, const Claim& claim) {
  TSR_ASSIGN_OR_RETURN(Mac expected, claimMac(secret, acceptorNonce, claim.jobId, claim.rank, claim.nonce));
  if (!digestsEqual(expected, claim.mac))  // nothing it claims is repeated: none of it is known true
    return Status(Code::kBootstrap,
                  "the claim's HMAC does not verify (wrong job secret, or a replacement knocking at a bootstrap's "
                  "port before any grow)");
  return Status::ok();
}

Result<std::string> encodeAnswer(const std::string& secret, const Nonce& acceptorNonce, const Nonce& connectorNonce,
                                 const std::string& jobId, uint32_t acceptorRank, uint32_t connectorRank) {
  TSR_ASSIGN_OR_RETURN(Mac mac, answerMac(secret, acceptorNonce, connectorNonce, jobId, acceptorRank, connectorRank));
  std::string s;
  putU32(s, kMagic);
  putU32(s, acceptorRank);
  return s + std::string(asView(mac));
}

Result<Answer> decodeAnswer(std::string_view bytes) {
  if (bytes.size() != kAnswerBytes) return Status(Code::kInternal, "answer has the wrong size");
  TSR_RETURN_IF_ERROR(checkMagic(bytes, "answer"));
  Answer a;
  a.rank = static_cast<uint32_t>(getBE(bytes, 4, 4));
  copyInto(a.mac, bytes, 8);
  return a;
}

Status verifyAnswer(const std::string& secret, const Nonce& acceptorNonce, const Nonce& connectorNonce,
                    const std::string& jobId, uint32_t connectorRank, const Answer& answer) {
  TSR_ASSIGN_OR_RETURN(Mac expected,
                       answerMac(secret, acceptorNonce, connectorNonce, jobId, answer.rank, connectorRank));
  if (!digestsEqual(expected, answer.mac))
    return Status(Code::kBootstrap, "the answer's HMAC does not verify (wrong job secret)");
  return Status::ok();
}

Result<Mac> sessionKey(const std::string& secret, const Nonce& acceptorNonce, const Nonce& connectorNonce,
                       const std::string& jobId, uint32_t connectorRank, uint32_t acceptorRank) {
  return hmacSha256(secret, {"tsr-session", view(acceptorNonce), view(connectorNonce), jobIdField(jobId),
                             u32Bytes(connectorRank), u32Bytes(acceptorRank)});
}

Result<std::string> encodeFrame(const Mac& key, uint64_t seq, std::string_view payload) {
  if (payload.size() > UINT32_MAX)
    return Status(Code::kInvalidArgument,
                  "frame payload of " + std::to_string(payload.size()) + " bytes exceeds 4 GiB");
  TSR_ASSIGN_OR_RETURN(Mac mac, frameMac(key, seq, payload));
  std::string s;
  s.reserve(kFrameHeadBytes + payload.size() + mac.size());
  putU64(s, seq);
  putU32(s, static_cast<uint32_t>(payload.size()));
  s += payload;
  s += asView(mac);
  return s;
}

FrameHead decodeFrameHead(std::string_view bytes) {
  return FrameHead{getBE(bytes, 0, 8), static_cast<uint32_t>(getBE(bytes, 8, 4))};
}

Status verifyFrame(const Mac& key, uint64_t seq, std::string_view payload, std::string_view mac) {
  TSR_ASSIGN_OR_RETURN(Mac expected, frameMac(key, seq, payload));
  Mac got{};
  if (mac.size() != got.size()) return Status(Code::kInternal, "frame MAC has the wrong size");
  copyInto(got, mac, 0);
  if (!digestsEqual(expected, got))
    return Status(Code::kBootstrap, "frame " + std::to_string(seq) + " fails its HMAC check");
  return Status::ok();
}

}  // namespace tsr::runtime::wire
