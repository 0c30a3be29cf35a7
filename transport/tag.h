// The 64-bit UCX tag layout. Every message of a collective is matched by its full tag, so
// messages of different communicators, collectives (sequence numbers) and steps never mix.
//
//   63           48 47        40 39  38  37             20 19                0
//  +---------------+------------+----+----+---------------+------------------+
//  |  source rank  |  comm id   |ctl |p2p | sequence      |  message id      |
//  +---------------+------------+----+----+---------------+------------------+
//       16 bits       8 bits     1 bit 1 bit    18 bits          20 bits
//
// * source rank: UCP tags carry no sender, so a receive from peer p matches p's rank here.
// * ctl: control messages (abort notices) that any rank may send at any time.
// * p2p: point-to-point messages (send/recv), which only two ranks order: their sequence is
//   the pair's count of messages of that user tag so far, their message id the user tag.
// * sequence number: the communicator's collective counter, modulo 2^18.
// * message id: chosen by the plan: both sides of a transfer compute the same id.
//   kHeaderMessageId is reserved for the per-peer header that checks collective arguments.
#pragma once

#include <cstdint>

namespace tsr::transport {

inline constexpr int kTagRankBits = 16;
inline constexpr int kTagCommBits = 8;
inline constexpr int kTagSeqBits = 18;
inline constexpr int kTagMsgBits = 20;
inline constexpr uint64_t kTagMsgMask = (uint64_t{1} << kTagMsgBits) - 1;
inline constexpr uint64_t kTagSeqMask = (uint64_t{1} << kTagSeqBits) - 1;
inline constexpr uint64_t kTagCommMask = (uint64_t{1} << kTagCommBits) - 1;
inline constexpr uint64_t kTagRankMask = (uint64_t{1} << kTagRankBits) - 1;
inline constexpr int kMaxRanks = 1 << kTagRankBits;
inline constexpr uint32_t kHeaderMessageId = static_cast<uint32_t>(kTagMsgMask);
inline constexpr uint32_t kMaxMessageId = kHeaderMessageId - 1;

inline constexpr int kTagMsgShift = 0;
inline constexpr int kTagSeqShift = kTagMsgBits;
inline constexpr int kTagP2pShift = kTagSeqShift + kTagSeqBits;
inline constexpr int kTagCtlShift = kTagP2pShift + 1;
inline constexpr int kTagCommShift = kTagCtlShift + 1;
inline constexpr int kTagRankShift = kTagCommShift + kTagCommBits;
static_assert(kTagRankShift + kTagRankBits == 64, "tag layout must fill 64 bits");

inline constexpr uint64_t kTagFullMask = ~uint64_t{0};

constexpr uint64_t makeDataTag(int source, uint32_t comm, uint32_t seq, uint32_t msg) {
  return (static_cast<uint64_t>(source) & kTagRankMask) << kTagRankShift |
         (static_cast<uint64_t>(comm) & kTagCommMask) << kTagCommShift |
         (static_cast<uint64_t>(seq) & kTagSeqMask) << kTagSeqShift |
         (static_cast<uint64_t>(msg) & kTagMsgMask) << kTagMsgShift;
}

constexpr uint64_t makeControlTag(int source, uint32_t comm) {
  return (static_cast<uint64_t>(source) & kTagRankMask) << kTagRankShift |
         (static_cast<uint64_t>(comm) & kTagCommMask) << kTagCommShift | uint64_t{1} << kTagCtlShift;
}

// The n-th message (mod 2^18) with user tag userTag (< 2^20) from source in comm.
constexpr uint64_t makePointToPointTag(int source, uint32_t comm, uint32_t n, uint32_t userTag) {
  return makeDataTag(source, comm, n, userTag) | uint64_t{1} << kTagP2pShift;
}
inline constexpr uint32_t kMaxPointToPointTag = static_cast<uint32_t>(kTagMsgMask);

// Matches control messages of one communicator from any source.
constexpr uint64_t kControlTagMask = kTagCommMask << kTagCommShift | uint64_t{1} << kTagCtlShift;

constexpr int tagSource(uint64_t tag) { return static_cast<int>((tag >> kTagRankShift) & kTagRankMask); }

}  // namespace tsr::transport
