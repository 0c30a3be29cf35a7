#include <gtest/gtest.h>

#include <cstdint>

#include "runtime/scratch_pool.h"

namespace tsr::runtime {
namespace {

TEST(ScratchPool, ReusesReleasedBlocksAndAligns) {
  auto pool = std::make_shared<ScratchPool>();
  void* first = nullptr;
  {
    auto a = pool->acquire(1000);
    ASSERT_TRUE(a.isOk());
    first = a.value().get();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    EXPECT_EQ(pool->idleBytes(), 0u);
  }
  EXPECT_EQ(pool->idleBytes(), 1024u);
  auto b = pool->acquire(900);  // fits the idle 1024-byte block
  ASSERT_TRUE(b.isOk());
  EXPECT_EQ(b.value().get(), first);
  auto c = pool->acquire(900);  // the only idle block is taken: a new one
  ASSERT_TRUE(c.isOk());
  EXPECT_NE(c.value().get(), first);
  auto big = pool->acquire(100);  // too small a request for the idle pool to hand a big block
  ASSERT_TRUE(big.isOk());
}

TEST(ScratchPool, IdleMemoryIsCappedAndBlocksOutliveThePool) {
  auto pool = std::make_shared<ScratchPool>();
  std::shared_ptr<void> keep;
  {
    auto a = pool->acquire(ScratchPool::kMaxFreeBytes / 2 + 64);
    auto b = pool->acquire(ScratchPool::kMaxFreeBytes / 2 + 64);
    auto c = pool->acquire(4096);
    ASSERT_TRUE(a.isOk() && b.isOk() && c.isOk());
    keep = c.take();
  }
  EXPECT_LE(pool->idleBytes(), ScratchPool::kMaxFreeBytes);
  pool.reset();  // a block still held is freed by its holder, not returned to a dead pool
  keep.reset();
}

}  // namespace
}  // namespace tsr::runtime
