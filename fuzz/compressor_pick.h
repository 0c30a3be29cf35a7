// The compressor the payload target decodes with, from two bytes of its input (shared with
// make_seeds, whose seeds are that compressor's own payloads).
#pragma once

#include <cstdint>
#include <string>

#include "algorithms/compress/registry.h"

namespace tsr::fuzz {

// Input bytes 0..3: kind, knob, tensor size (big-endian, below 2049).
inline constexpr size_t kPayloadHead = 4;

inline compress::Params pickCompressor(uint8_t kind, uint8_t knob) {
  static const char* kinds[] = {"onebit", "topk", "randomk", "dithering", "fp16", "bf16", "none"};
  compress::Params p{{"compressor", kinds[kind % 7]}};
  switch (kind % 7) {
    case 0:
      p["scaling"] = knob & 1 ? "true" : "false";
      if (knob & 0x20) p["scale_block"] = "128";
      break;
    case 1:
    case 2:
      p["k"] = knob & 1 ? "0.05" : std::to_string(1 + knob % 64);
      break;
    case 3:
      p["k"] = std::to_string(1 + knob % 15);
      p["dithering_partition"] = knob & 0x10 ? "natural" : "linear";
      p["dithering_normalize"] = knob & 0x20 ? "l2" : "max";
      break;
  }
  if (knob & 0x40) p["ef"] = "vanilla";
  if (knob & 0x80) p["momentum"] = "nesterov";
  return p;
}

inline size_t pickCount(const uint8_t* head) { return (size_t{head[2]} << 8 | head[3]) % 2049; }

}  // namespace tsr::fuzz
