// SpareBuffers: copies reuse kept capacity (no new allocation), the smallest that fits is
// taken, and the total kept stays within the limit.
#include "transport/spare_buffers.h"

#include <gtest/gtest.h>

#include <string>

namespace tsr::transport {
namespace {

TEST(SpareBuffers, CopiesIntoAKeptBufferWithoutAllocating) {
  SpareBuffers pool(1 << 20);
  std::string a(1000, 'a'), b(600, 'b');
  std::vector<char> first = pool.copyOf(a.data(), a.size());
  const char* storage = first.data();
  pool.giveBack(std::move(first));
  EXPECT_EQ(pool.keptBuffers(), 1u);
  std::vector<char> second = pool.copyOf(b.data(), b.size());
  EXPECT_EQ(second.data(), storage) << "the kept buffer was not reused";
  EXPECT_EQ(std::string(second.begin(), second.end()), b);
  EXPECT_EQ(pool.keptBuffers(), 0u);
  EXPECT_EQ(pool.keptBytes(), 0u);
}

TEST(SpareBuffers, TakesTheSmallestThatFits) {
  SpareBuffers pool(1 << 20);
  std::string big(4000, 'x'), mid(2000, 'y'), small(100, 'z');
  std::vector<char> bigBuf = pool.copyOf(big.data(), big.size()), midBuf = pool.copyOf(mid.data(), mid.size());
  const char* midStorage = midBuf.data();
  pool.giveBack(std::move(bigBuf));
  pool.giveBack(std::move(midBuf));
  std::vector<char> got = pool.copyOf(small.data(), small.size());
  EXPECT_EQ(got.data(), midStorage);
  EXPECT_EQ(pool.keptBuffers(), 1u);
  // Nothing kept is large enough: a new buffer, the kept one stays.
  std::string huge(8000, 'h');
  std::vector<char> fresh = pool.copyOf(huge.data(), huge.size());
  EXPECT_EQ(std::string(fresh.begin(), fresh.end()), huge);
  EXPECT_EQ(pool.keptBuffers(), 1u);
}

TEST(SpareBuffers, KeepsNoMoreThanItsLimit) {
  SpareBuffers pool(3000);
  std::string data(1000, 'd');
  std::vector<char> a = pool.copyOf(data.data(), data.size()), b = pool.copyOf(data.data(), data.size()),
                    c = pool.copyOf(data.data(), data.size()), d = pool.copyOf(data.data(), data.size());
  size_t each = a.capacity();
  pool.giveBack(std::move(a));
  pool.giveBack(std::move(b));
  pool.giveBack(std::move(c));
  pool.giveBack(std::move(d));
  EXPECT_EQ(pool.keptBuffers(), 3000 / each);
  EXPECT_LE(pool.keptBytes(), 3000u);
}

}  // namespace
}  // namespace tsr::transport
