// One reading of sizes for every tool: K/M/G/T and KiB.. are powers of 1024, KB.. of 1000.
#include <gtest/gtest.h>

#include "tools/common/byte_size.h"

namespace tsr::tools {
namespace {

size_t bytes(const char* text) {
  auto r = parseByteSize(text, "--size");
  EXPECT_TRUE(r.isOk()) << text << ": " << r.status().message();
  return r.isOk() ? r.value() : 0;
}

TEST(ByteSize, SuffixesArePowersOf1024AndKBIsSpelledOut) {
  EXPECT_EQ(bytes("4096"), 4096u);
  EXPECT_EQ(bytes("8B"), 8u);
  EXPECT_EQ(bytes("4K"), 4096u);  // tsr-sim read 4000 here, tsr-bench 4096
  EXPECT_EQ(bytes("4k"), 4096u);
  EXPECT_EQ(bytes("4KiB"), 4096u);
  EXPECT_EQ(bytes("64M"), size_t{64} << 20);
  EXPECT_EQ(bytes("64m"), size_t{64} << 20);
  EXPECT_EQ(bytes("64MiB"), size_t{64} << 20);
  EXPECT_EQ(bytes("2G"), size_t{2} << 30);
  EXPECT_EQ(bytes("1GiB"), size_t{1} << 30);
  EXPECT_EQ(bytes("1T"), size_t{1} << 40);
  EXPECT_EQ(bytes("4KB"), 4000u);
  EXPECT_EQ(bytes("4kB"), 4000u);
  EXPECT_EQ(bytes("64MB"), 64000000u);
  EXPECT_EQ(bytes("1GB"), 1000000000u);
  EXPECT_EQ(bytes("1.5K"), 1536u);
  EXPECT_EQ(bytes("1e-3"), 0u);  // rounded down
  EXPECT_EQ(bytes("12 MiB"), size_t{12} << 20);
}

TEST(ByteSize, RefusalsNameTheOptionAndTheText) {
  for (const char* bad : {"", "12furlongs", "12 furlongs", "K", "-1", "+1", "nan", "inf", "0x10", " 5", "1Kb/s"}) {
    auto r = parseByteSize(bad, "--chunk");
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind(std::string("--chunk ") + bad + ": not a size (", 0), 0u)
        << r.status().message();
  }
  for (const char* huge : {"2T", "1025GiB", "99999999999999999999", "1e30"}) {
    auto r = parseByteSize(huge, "-e");
    ASSERT_FALSE(r.isOk()) << huge;
    EXPECT_EQ(r.status().message(), std::string("-e ") + huge + ": too large (at most 1T, 2^40 bytes)");
  }
}

}  // namespace
}  // namespace tsr::tools
