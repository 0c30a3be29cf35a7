// The SparDL wire format alone: round trip, and every malformed message named.
#include <gtest/gtest.h>

#include "algorithms/spardl/sparse_wire.h"

namespace tsr::spardl {
namespace {

TEST(SparseWire, RoundTripsBlocksAndHeader) {
  std::vector<std::byte> msg;
  encodeHeader({1, 1000, 0.25f, 2}, msg);
  std::vector<uint32_t> i0{1, 5, 9}, i1{};
  std::vector<float> v0{0.5f, -2.0f, 3.0f}, v1{};
  encodeBlock(7, 2, i0, v0, msg);
  encodeBlock(8, 1, i1, v1, msg);
  EXPECT_EQ(msg.size(), maxWireBytes(2, 3) - 8 * 3);  // the second block is empty
  WireHeader h;
  std::vector<WireBlock> blocks;
  ASSERT_TRUE(decode(msg, &h, &blocks).isOk());
  EXPECT_EQ(h.flags, 1u);
  EXPECT_EQ(h.count, 1000u);
  EXPECT_EQ(h.density, 0.25f);
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].id, 7u);
  EXPECT_EQ(blocks[0].copies, 2u);
  EXPECT_EQ(std::vector<uint32_t>(blocks[0].indices.begin(), blocks[0].indices.end()), i0);
  EXPECT_EQ(std::vector<float>(blocks[0].values.begin(), blocks[0].values.end()), v0);
  EXPECT_TRUE(blocks[1].indices.empty());
}

TEST(SparseWire, MalformedMessagesAreNamed) {
  std::vector<std::byte> msg;
  encodeHeader({0, 10, 0.5f, 1}, msg);
  std::vector<uint32_t> idx{1, 2};
  std::vector<float> val{1, 2};
  encodeBlock(0, 1, idx, val, msg);
  WireHeader h;
  std::vector<WireBlock> blocks;
  auto truncated = std::span<const std::byte>(msg).first(msg.size() - 4);
  Status st = decode(truncated, &h, &blocks);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("block 0 of 1 is truncated"), std::string::npos) << st.message();
  msg.push_back(std::byte{0});
  st = decode(msg, &h, &blocks);
  EXPECT_NE(st.message().find("1 trailing bytes"), std::string::npos) << st.message();
  msg[0] = std::byte{0};
  st = decode(msg, &h, &blocks);
  EXPECT_NE(st.message().find("malformed sparse message header"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tsr::spardl
