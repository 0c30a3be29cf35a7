// What the join links share (internal header: it brings in Boost.Asio): the ranks the two ends
// claim in the handshake, the frames' kinds, the request's bytes and reading one frame.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/bootstrap/handshake.h"
#include "runtime/bootstrap/join_link.h"

namespace tsr::runtime::detail {

// Not ranks of any communicator: a join link can never pass for a ring link, nor the reverse.
constexpr int kJoinerRank = 0x7ffffff0;
constexpr int kJoinMemberRank = 0x7ffffff1;
constexpr char kJoinRequestFrame = 'J';
constexpr char kWelcomeFrame = 'W';
constexpr uint32_t kMaxJoinFrameBytes = 1u << 20;

HandshakeParams joinHandshake(const JoinCredentials& credentials, bool member);

// "host\nport\nhostId"
std::string encodeJoinRequest(const JoinRequest& request);
Result<JoinRequest> decodeJoinRequest(std::string_view text);

// Reads the link's next frame (async, on the link's io_context); `done` gets its payload, or
// why there was none. The link must outlive the read (the caller holds it).
void readFrame(Link& link, std::function<void(Result<std::string>)> done);

}  // namespace tsr::runtime::detail
