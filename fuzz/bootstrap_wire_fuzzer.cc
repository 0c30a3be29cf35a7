// The bootstrap's handshake and frames as a stranger on the network sends them (wire.h),
// through the same checks in the same order as handshake.cc and bootstrap.cc apply them.
// The first byte picks the message; the rest is what arrives on the socket.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz/wire_keys.h"
#include "runtime/bootstrap/wire.h"

using namespace tsr::runtime;
using namespace tsr::fuzz::wire_keys;

namespace {

// Connector: reads exactly kHelloBytes, then decodes.
void hello(std::string_view in) {
  if (in.size() < wire::kHelloBytes) return;
  auto n = wire::decodeHello(in.substr(0, wire::kHelloBytes));
  if (n.isOk()) (void)wire::encodeClaim(kSecret, n.value(), kMyRank, kJobId, connectorNonce());
}

// Acceptor: the claim's head, then a tail of the length the head announces.
void claim(std::string_view in) {
  if (in.size() < wire::kClaimHeadBytes) return;
  auto head = wire::decodeClaimHead(in.substr(0, wire::kClaimHeadBytes));
  if (!head.isOk()) return;
  std::string_view rest = in.substr(wire::kClaimHeadBytes);
  if (rest.size() < head.value().tailBytes()) return;  // the socket read waits for all of it
  wire::Claim c = wire::decodeClaimTail(head.value(), rest.substr(0, head.value().tailBytes()));
  if (!wire::verifyClaim(kSecret, acceptorNonce(), c).isOk()) return;
  if (c.jobId != kJobId || c.rank != kPeerRank) return;
  (void)wire::encodeAnswer(kSecret, acceptorNonce(), c.nonce, kJobId, kMyRank, kPeerRank);
}

// Connector: the acceptor's answer, exactly kAnswerBytes.
void answer(std::string_view in) {
  if (in.size() < wire::kAnswerBytes) return;
  auto a = wire::decodeAnswer(in.substr(0, wire::kAnswerBytes));
  if (!a.isOk()) return;
  (void)wire::verifyAnswer(kSecret, acceptorNonce(), connectorNonce(), kJobId, kMyRank, a.value());
}

// A data frame: head, the sequence and length checks, then body and MAC.
void frame(std::string_view in) {
  auto key = wire::sessionKey(kSecret, acceptorNonce(), connectorNonce(), kJobId, kPeerRank, kMyRank);
  if (!key.isOk() || in.size() < wire::kFrameHeadBytes) return;
  wire::FrameHead h = wire::decodeFrameHead(in.substr(0, wire::kFrameHeadBytes));
  if (h.seq != 0 || h.length > kMaxBlobBytes) return;
  std::string_view body = in.substr(wire::kFrameHeadBytes);
  if (body.size() < h.length + kDigestBytes) return;
  body = body.substr(0, h.length + kDigestBytes);
  (void)wire::verifyFrame(key.value(), h.seq, body.substr(0, h.length), body.substr(h.length));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      hello(in);
      break;
    case 1:
      claim(in);
      break;
    case 2:
      answer(in);
      break;
    case 3:
      frame(in);
      break;
  }
  return 0;
}
