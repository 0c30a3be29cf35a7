#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

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

TEST(ScratchPool, SizeClassesWasteAtMostAQuarter) {
  EXPECT_EQ(ScratchPool::sizeClass(0), 64u);
  EXPECT_EQ(ScratchPool::sizeClass(65), 128u);
  EXPECT_EQ(ScratchPool::sizeClass(4096), 4096u);
  EXPECT_EQ(ScratchPool::sizeClass(4097), 5120u);
  EXPECT_EQ(ScratchPool::sizeClass(size_t{5} << 20), size_t{5} << 20);
  EXPECT_EQ(ScratchPool::sizeClass((size_t{5} << 20) + 1), size_t{6} << 20);
  for (size_t bytes = 1; bytes < (size_t{1} << 26); bytes = bytes * 3 / 2 + 7) {
    const size_t c = ScratchPool::sizeClass(bytes);
    EXPECT_GE(c, bytes);
    EXPECT_EQ(c % 64, 0u);
    if (bytes > 4096) {
      EXPECT_LE(c, bytes + bytes / 4 + 64) << bytes;
    }
    EXPECT_EQ(ScratchPool::sizeClass(c), c) << "a class is its own class";
  }
}

// Sizes that grow a little from call to call (a training loop's buckets, a soak's random
// sizes) reuse one block per class instead of taking a new one each time.
TEST(ScratchPool, GrowingSizesReuseTheirClassBlock) {
  auto pool = std::make_shared<ScratchPool>();
  // (5 MiB, 6 MiB] is one class: rounded to 64 bytes only, each request took a new block.
  for (size_t bytes = (size_t{5} << 20) + 1024; bytes <= (size_t{6} << 20); bytes += 1024) {
    auto block = pool->acquire(bytes);
    ASSERT_TRUE(block.isOk());
  }
  EXPECT_EQ(pool->blocksAllocated(), 1u);
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

// A pool over a counting memory: blocks come from it once, are reused, and every block goes
// back to it exactly once, also a block still held when the pool dies.
TEST(ScratchPool, BlocksComeFromAndReturnToItsMemory) {
  struct Counts {
    int allocated = 0, released = 0;
  };
  auto counts = std::make_shared<Counts>();
  auto memory = std::make_shared<ScratchMemory>(ScratchMemory{"counting",
                                                              [counts](size_t bytes) -> Result<void*> {
                                                                ++counts->allocated;
                                                                return std::aligned_alloc(64, bytes);
                                                              },
                                                              [counts](void* p) {
                                                                ++counts->released;
                                                                std::free(p);
                                                              }});
  auto pool = std::make_shared<ScratchPool>(memory);
  EXPECT_EQ(pool->memoryName(), "counting");
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(pool->acquire(4096).isOk());
  EXPECT_EQ(counts->allocated, 1);
  EXPECT_EQ(pool->blocksAllocated(), 1u);
  auto held = pool->acquire(4096);
  auto second = pool->acquire(4096);
  ASSERT_TRUE(held.isOk() && second.isOk());
  EXPECT_EQ(counts->allocated, 2);
  std::shared_ptr<void> keep = held.take();
  second = Status(Code::kInternal, "dropped");
  pool.reset();  // frees the idle block through the memory
  EXPECT_EQ(counts->released, 1);
  keep.reset();  // the held block too, though its pool is gone
  EXPECT_EQ(counts->released, 2);
}

}  // namespace
}  // namespace tsr::runtime
