// Collectives and messages past 2^31 elements and 2^32 bytes, ranks as threads over real UCX:
// element counts, byte offsets and message sizes that a 32-bit narrowing would cut. Each case
// holds two buffers of 4 GiB or more (about 8.5 GiB resident, 11 at the peak), so the whole
// file is the full tier (FullLarge), run alone (RUN_SERIAL), and skipped on a machine with
// less than 12 GiB available.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "base/half.h"
#include "tests/support/thread_world.h"

namespace tsr {
namespace {

using runtime::Communicator;

testing::Settings onHost(int host, const std::string& algo = "auto") {
  return {{"TSR_TEST_HOST_ID", "h" + std::to_string(host)}, {"TSR_ALGO", algo}, {"TSR_TIMEOUT_MS", "600000"}};
}

// MemAvailable of /proc/meminfo in GiB (0 when unknown).
double availableGiB() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  double kb = 0;
  while (in >> key >> kb >> unit)  // "MemAvailable:   22000000 kB"
    if (key == "MemAvailable:") return kb / (1024.0 * 1024.0);
  return 0;
}

#define SKIP_WITHOUT_ROOM() \
  if (availableGiB() < 12) GTEST_SKIP() << "needs 12 GiB of available memory, " << availableGiB() << " GiB here"

struct Free {
  void operator()(void* p) const { std::free(p); }
};

template <typename T>
std::unique_ptr<T[], Free> bigArray(size_t n) {
  return std::unique_ptr<T[], Free>(static_cast<T*>(std::malloc(n * sizeof(T))));
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// f16 allreduce of 2^31 + 96 elements in place (4 GiB per rank): rank r holds (j % 7) + r + 1.
void bigF16Allreduce(Communicator& comm, ReduceOp op) {
  const size_t n = (size_t{1} << 31) + 96;
  auto data = bigArray<uint16_t>(n);
  ASSERT_TRUE(data);
  uint16_t value[7];
  for (int v = 0; v < 7; ++v) value[v] = floatToF16(static_cast<float>(v + comm.rank() + 1));
  for (size_t j = 0; j < n; ++j) data[j] = value[j % 7];
  auto t0 = std::chrono::steady_clock::now();
  auto req = comm.allreduce(data.get(), data.get(), n, DataType::kF16, op);
  ASSERT_TRUE(req.isOk()) << req.status().toString();
  Status st = req.value()->wait();
  ASSERT_TRUE(st.isOk()) << st.toString();
  std::fprintf(stderr, "rank %d: allreduce %s in %.1f s\n", comm.rank(), req.value()->algorithm().c_str(), since(t0));
  const int size = comm.size();
  for (size_t j = 0; j < n; ++j) {
    float sum = 0;
    for (int r = 0; r < size; ++r) sum += static_cast<float>(j % 7 + r + 1);
    if (op == ReduceOp::kAvg) sum /= static_cast<float>(size);
    if (f16ToFloat(data[j]) != sum) {
      ADD_FAILURE() << "rank " << comm.rank() << ": element " << j << " is " << f16ToFloat(data[j]) << ", not " << sum;
      return;
    }
  }
}

TEST(FullLarge, F16AllreducePast2To31ElementsOverMessages) {
  SKIP_WITHOUT_ROOM();
  testing::runRanksEach(
      2, [](Communicator& comm) { bigF16Allreduce(comm, ReduceOp::kSum); }, [](int rank) { return onHost(rank); });
}

TEST(FullLarge, F16AllreducePast2To31ElementsOverSharedMemory) {
  SKIP_WITHOUT_ROOM();
  testing::runRanksEach(
      2, [](Communicator& comm) { bigF16Allreduce(comm, ReduceOp::kAvg); }, [](int) { return onHost(0); });
}

// One message of 2^32 + 4 KiB: send / recv.
TEST(FullLarge, PointToPointPast2To32Bytes) {
  SKIP_WITHOUT_ROOM();
  testing::runRanksEach(
      2,
      [](Communicator& comm) {
        const size_t n = (size_t{1} << 30) + 1024;  // f32
        auto data = bigArray<float>(n);
        ASSERT_TRUE(data);
        auto t0 = std::chrono::steady_clock::now();
        if (comm.rank() == 0) {
          for (size_t j = 0; j < n; ++j) data[j] = static_cast<float>(j % 1000003);
          auto req = comm.send(data.get(), n, DataType::kF32, 1, 5);
          ASSERT_TRUE(req.isOk()) << req.status().toString();
          Status st = req.value()->wait();
          ASSERT_TRUE(st.isOk()) << st.toString();
        } else {
          std::fill_n(data.get(), n, -1.0f);
          auto req = comm.recv(data.get(), n, DataType::kF32, 0, 5);
          ASSERT_TRUE(req.isOk()) << req.status().toString();
          Status st = req.value()->wait();
          ASSERT_TRUE(st.isOk()) << st.toString();
          for (size_t j = 0; j < n; ++j)
            if (data[j] != static_cast<float>(j % 1000003)) {
              ADD_FAILURE() << "element " << j << " is " << data[j];
              return;
            }
        }
        std::fprintf(stderr, "rank %d: p2p in %.1f s\n", comm.rank(), since(t0));
      },
      [](int rank) { return onHost(rank); });
}

// Broadcast of 2^31 + 96 f16 elements from rank 1.
TEST(FullLarge, F16BroadcastPast2To31Elements) {
  SKIP_WITHOUT_ROOM();
  testing::runRanksEach(
      2,
      [](Communicator& comm) {
        const size_t n = (size_t{1} << 31) + 96;
        auto data = bigArray<uint16_t>(n);
        ASSERT_TRUE(data);
        for (size_t j = 0; j < n; ++j) data[j] = comm.rank() == 1 ? static_cast<uint16_t>(j % 30011) : 0xffff;
        auto req = comm.broadcast(data.get(), data.get(), n, DataType::kF16, 1);
        ASSERT_TRUE(req.isOk()) << req.status().toString();
        Status st = req.value()->wait();
        ASSERT_TRUE(st.isOk()) << st.toString();
        for (size_t j = 0; j < n; ++j)
          if (data[j] != static_cast<uint16_t>(j % 30011)) {
            ADD_FAILURE() << "rank " << comm.rank() << ": element " << j << " is " << data[j];
            return;
          }
      },
      [](int rank) { return onHost(rank); });
}

}  // namespace
}  // namespace tsr
