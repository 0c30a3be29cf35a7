#include "runtime/bootstrap/hmac.h"

#include <gtest/gtest.h>

namespace tsr::runtime {
namespace {

std::string hex(const Digest& d) { return toHex(d.data(), d.size()); }

// RFC 4231 section 4.2 (test case 1) and 4.3 (test case 2).
TEST(Hmac, Rfc4231TestCase1) {
  std::string key(20, '\x0b');
  auto d = hmacSha256(key, {"Hi There"});
  ASSERT_TRUE(d.isOk()) << d.status().toString();
  EXPECT_EQ(hex(d.value()), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST(Hmac, Rfc4231TestCase2SplitIntoParts) {
  auto d = hmacSha256("Jefe", {"what do ya", " want ", "", "for nothing?"});
  ASSERT_TRUE(d.isOk());
  EXPECT_EQ(hex(d.value()), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

// RFC 4231 test case 6: a key longer than the block size is hashed first.
TEST(Hmac, Rfc4231TestCase6LongKey) {
  std::string key(131, '\xaa');
  auto d = hmacSha256(key, {"Test Using Larger Than Block-Size Key - Hash Key First"});
  ASSERT_TRUE(d.isOk());
  EXPECT_EQ(hex(d.value()), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(Hmac, EmptyKeyEqualsZeroByteKey) {
  auto a = hmacSha256("", {"data"});
  auto b = hmacSha256(std::string(1, '\0'), {"data"});
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_TRUE(digestsEqual(a.value(), b.value()));
  auto c = hmacSha256("k", {"data"});
  EXPECT_FALSE(digestsEqual(a.value(), c.value()));
}

TEST(Hmac, RandomBytesDiffer) {
  Digest a{}, b{};
  ASSERT_TRUE(randomBytes(a.data(), a.size()).isOk());
  ASSERT_TRUE(randomBytes(b.data(), b.size()).isOk());
  EXPECT_FALSE(digestsEqual(a, b));
}

}  // namespace
}  // namespace tsr::runtime
