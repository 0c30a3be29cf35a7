// SparDL's message format: one message per transfer (a bag of sparse blocks), COO inside.
//
//   header  (24 bytes): magic "SPDL", flags (bit 0: the sender or someone before it saw NaN or
//           Inf this step), tensor count (u64), density (f32 bits), block count (u32)
//   per block: block id (u32), copies (u32: ranks holding this very sum), nnz (u32), then nnz
//           u32 indices relative to the block (increasing), then nnz f32 values.
// The header lets a receiver name a peer that called with another tensor or density.
// Pure functions, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace tsr::spardl {

inline constexpr uint32_t kWireMagic = 0x4c445053;  // "SPDL"
inline constexpr size_t kWireHeaderBytes = 24;
inline constexpr size_t kWireBlockHeaderBytes = 12;

struct WireHeader {
  uint32_t flags = 0;
  uint64_t count = 0;
  float density = 0;
  uint32_t blocks = 0;
};

struct WireBlock {
  uint32_t id = 0;
  uint32_t copies = 1;
  std::span<const uint32_t> indices;
  std::span<const float> values;
};

// Largest message for `blocks` blocks of at most `maxNnz` entries each.
size_t maxWireBytes(size_t blocks, size_t maxNnz);

// Appends to `out` (cleared first).
void encodeHeader(const WireHeader& h, std::vector<std::byte>& out);
void encodeBlock(uint32_t id, uint32_t copies, std::span<const uint32_t> indices, std::span<const float> values,
                 std::vector<std::byte>& out);

// Parses a message; blocks point into `bytes`. Errors name what is malformed.
Status decode(std::span<const std::byte> bytes, WireHeader* header, std::vector<WireBlock>* blocks);

}  // namespace tsr::spardl
