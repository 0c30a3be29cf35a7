// A peer's compressed payload as compressed_step.cc averages it: the peer fills its slot of
// the all-gather (u64 length, then the payload) with anything; the receiver checks the length
// against the slot and decompresses with its own compressor. The compressor and the tensor
// size come from the input's first bytes (compressor_pick.h), as any rank's arguments might.
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz/compressor_pick.h"

using namespace tsr;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < fuzz::kPayloadHead) return 0;
  const size_t count = fuzz::pickCount(data);
  auto made = compress::createCompressor(fuzz::pickCompressor(data[0], data[1]), count);
  if (!made.isOk()) __builtin_trap();  // pickCompressor only makes valid parameter sets
  compress::Compressor& c = *made.value();
  // The slot as it arrived (8-byte aligned, like the all-gather buffer): what the peer sent,
  // zero-padded to the slot's size; a longer message does not fit the receive.
  const size_t slotWords = 1 + (c.maxCompressedBytes() + 7) / 8;
  const size_t sent = size - fuzz::kPayloadHead;
  if (sent > slotWords * 8) return 0;
  std::vector<uint64_t> slot(slotWords, 0);
  std::memcpy(slot.data(), data + fuzz::kPayloadHead, sent);
  if (slot[0] > (slotWords - 1) * 8) return 0;  // oversizedPayload
  std::vector<float> decoded(count, 1.0f);
  Status st = c.decompress({reinterpret_cast<const std::byte*>(slot.data() + 1), slot[0]}, decoded);
  st.ignore();
  return 0;
}
