#include "algorithms/spardl/sparse_wire.h"

#include <cstring>

namespace tsr::spardl {

namespace {

template <typename T>
void put(std::vector<std::byte>& out, T v) {
  size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

template <typename T>
bool take(std::span<const std::byte> in, size_t* pos, T* v) {
  if (*pos + sizeof(T) > in.size()) return false;
  std::memcpy(v, in.data() + *pos, sizeof(T));
  *pos += sizeof(T);
  return true;
}

}  // namespace

size_t maxWireBytes(size_t blocks, size_t maxNnz) {
  return kWireHeaderBytes + blocks * (kWireBlockHeaderBytes + maxNnz * 8);
}

void encodeHeader(const WireHeader& h, std::vector<std::byte>& out) {
  out.clear();
  put(out, kWireMagic);
  put(out, h.flags);
  put(out, h.count);
  put(out, h.density);
  put(out, h.blocks);
}

void encodeBlock(uint32_t id, uint32_t copies, std::span<const uint32_t> indices, std::span<const float> values,
                 std::vector<std::byte>& out) {
  put(out, id);
  put(out, copies);
  put(out, static_cast<uint32_t>(indices.size()));
  size_t at = out.size();
  out.resize(at + indices.size_bytes() + values.size_bytes());
  if (!indices.empty()) std::memcpy(out.data() + at, indices.data(), indices.size_bytes());
  if (!values.empty()) std::memcpy(out.data() + at + indices.size_bytes(), values.data(), values.size_bytes());
}

Status decode(std::span<const std::byte> bytes, WireHeader* header, std::vector<WireBlock>* blocks) {
  size_t pos = 0;
  uint32_t magic = 0;
  if (!take(bytes, &pos, &magic) || magic != kWireMagic || !take(bytes, &pos, &header->flags) ||
      !take(bytes, &pos, &header->count) || !take(bytes, &pos, &header->density) || !take(bytes, &pos, &header->blocks))
    return Status(Code::kInvalidArgument,
                  "malformed sparse message header (" + std::to_string(bytes.size()) + " bytes)");
  blocks->clear();
  for (uint32_t b = 0; b < header->blocks; ++b) {
    WireBlock blk;
    uint32_t nnz = 0;
    if (!take(bytes, &pos, &blk.id) || !take(bytes, &pos, &blk.copies) || !take(bytes, &pos, &nnz) ||
        pos + size_t{nnz} * 8 > bytes.size())
      return Status(Code::kInvalidArgument, "sparse message: block " + std::to_string(b) + " of " +
                                                std::to_string(header->blocks) + " is truncated");
    // Offsets are 4-byte aligned: the header and every field are multiples of 4 bytes.
    blk.indices = {reinterpret_cast<const uint32_t*>(bytes.data() + pos), nnz};
    blk.values = {reinterpret_cast<const float*>(bytes.data() + pos + size_t{nnz} * 4), nnz};
    pos += size_t{nnz} * 8;
    blocks->push_back(blk);
  }
  if (pos != bytes.size())
    return Status(Code::kInvalidArgument, "sparse message: " + std::to_string(bytes.size() - pos) + " trailing bytes");
  return Status::ok();
}

}  // namespace tsr::spardl
