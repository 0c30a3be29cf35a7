// Sealing one message with AES-256-GCM (OpenSSL EVP, AES-NI where the CPU has it), and the
// replay window a receiver keeps per peer. Pure; the sealed transport (sealed_transport.h)
// puts them on the wire.
//
// A sealed message is seq (u64, big-endian) | ciphertext | GCM tag (16 bytes). The key is the
// link's, one per direction (sender, receiver), so the 96-bit nonce is simply the sequence
// number, which the sender never repeats under a key. The associated data is the UCX tag the
// message travels under: a message moved to another collective, step or peer slot fails.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"

namespace tsr::transport {

using LinkKey = std::array<uint8_t, 32>;
inline constexpr size_t kSealSeqBytes = 8;
inline constexpr size_t kSealTagBytes = 16;
inline constexpr size_t kSealOverhead = kSealSeqBytes + kSealTagBytes;
// The most bytes one message seals (OpenSSL's EVP calls take an int length).
inline constexpr size_t kMaxSealedBytes = 2147483647;

// One direction of one link. Not thread-safe; reused for every message (no allocation).
class Sealer {
 public:
  explicit Sealer(const LinkKey& key);
  ~Sealer();
  Sealer(const Sealer&) = delete;
  Sealer& operator=(const Sealer&) = delete;

  // out must hold bytes + kSealOverhead.
  Status seal(uint64_t seq, uint64_t tag, const void* in, size_t bytes, void* out);
  // in holds sealedBytes (>= kSealOverhead); out gets sealedBytes - kSealOverhead. The
  // sequence number is returned in *seq only when the message authenticates.
  Status open(uint64_t tag, const void* in, size_t sealedBytes, void* out, uint64_t* seq);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

// Sequence numbers seen from one peer: a number at or below the highest minus kWindow, or one
// seen before, is a replay. Messages of one peer arrive in order over its endpoint but may be
// opened in another order (receives complete as they are matched), hence the window.
class ReplayWindow {
 public:
  static constexpr uint64_t kWindow = 4096;
  // True (and recorded) when seq is new.
  bool accept(uint64_t seq);

 private:
  uint64_t highest_ = 0;  // seq + 1 of the highest accepted; 0: none yet
  std::array<uint64_t, kWindow / 64> seen_{};
};

}  // namespace tsr::transport
