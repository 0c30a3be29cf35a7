// TSR_SECURE=encrypt over real UCX, 4 ranks as threads, each its own emulated host (so every
// link is sealed): the collectives are exact, and one byte flipped on the wire, under the
// sealing, fails the receiving rank's collective naming the sender, and no rank returns a wrong
// result. Once
// through the receive path and once through the consumer path (reduce on arrival).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/communicator.h"
#include "tests/support/thread_world.h"
#include "tests/support/values.h"
#include "transport/tag.h"
#include "transport/testing/forwarding_transport.h"

namespace tsr {
namespace {

using transport::Completion;
using transport::MemoryType;

constexpr int kRanks = 4;
constexpr int kVictim = 0;

// Beneath the sealing on rank kVictim: once `armed`, flips one byte of the next data message
// it receives, whichever path it takes, and remembers from whom.
class FlipTap final : public transport::testing::ForwardingTransport {
 public:
  FlipTap(transport::Transport& inner, std::atomic<bool>& armed) : ForwardingTransport(inner), armed_(armed) {}
  Status recv(int peer, uint64_t tag, uint64_t mask, void* b, size_t bytes, MemoryType t, Completion* c) override {
    Status st = inner_.recv(peer, tag, mask, b, bytes, t, c);
    // Watched only once posted: a refused post's completion is freed at once by the layer
    // above (the sealing's operation), and reading it later would read freed memory.
    if (st.isOk() && targets(peer, tag)) watched_.push_back({c, static_cast<char*>(b), peer});
    return st;
  }
  Status recvToConsumer(int peer, uint64_t tag, size_t bytes, transport::Consumer* consumer, Completion* c) override {
    if (!targets(peer, tag)) return inner_.recvToConsumer(peer, tag, bytes, consumer, c);
    flippers_.push_back(std::make_unique<Flipper>(*this, consumer, bytes, peer));
    return inner_.recvToConsumer(peer, tag, bytes, flippers_.back().get(), c);
  }
  bool progress() override {
    bool busy = inner_.progress();
    // After the flip nothing more is watched: the communicator breaks, and the receives it
    // abandons are never completed (their completions go with their operations).
    if (flipped_) watched_.clear();
    for (auto it = watched_.begin(); it != watched_.end();) {
      if (!it->c->done) {
        ++it;
        continue;
      }
      if (it->c->status.isOk() && it->c->bytes > 32) flip(it->buffer + 20, it->peer);
      it = watched_.erase(it);
    }
    return busy;
  }

  static inline std::atomic<int> flippedFrom{-1};

 private:
  class Flipper final : public transport::Consumer {
   public:
    Flipper(FlipTap& tap, transport::Consumer* user, size_t bytes, int peer)
        : tap_(tap), user_(user), copy_(bytes), peer_(peer) {}
    void consume(const void* data) override {
      std::memcpy(copy_.data(), data, copy_.size());
      if (copy_.size() > 32) tap_.flip(copy_.data() + 20, peer_);
      user_->consume(copy_.data());
    }

   private:
    FlipTap& tap_;
    transport::Consumer* user_;
    std::vector<char> copy_;
    int peer_;
  };
  struct Watched {
    Completion* c;
    char* buffer;
    int peer;
  };
  bool targets(int peer, uint64_t tag) const {
    return rank() == kVictim && peer >= 0 && !(tag >> transport::kTagCtlShift & 1);
  }
  void flip(char* at, int peer) {
    if (!armed_.exchange(false)) return;
    *at ^= 0x10;
    flippedFrom = peer;
    flipped_ = true;
  }
  std::atomic<bool>& armed_;
  std::vector<Watched> watched_;
  bool flipped_ = false;
  std::vector<std::unique_ptr<Flipper>> flippers_;
};

testing::Settings sealedOnOwnHost(int rank, const std::string& arrival) {
  return {{"TSR_SECURE", "encrypt"},
          {"TSR_TEST_HOST_ID", "h" + std::to_string(rank)},
          {"TSR_ARRIVAL_REDUCE", arrival},
          {"TSR_TIMEOUT_MS", "20000"}};
}

template <typename R>
Status waitFor(R req) {
  return req.isOk() ? req.value()->wait() : req.status();
}

class SealedDataPlane : public ::testing::TestWithParam<std::string> {};

TEST_P(SealedDataPlane, CollectivesAreExact) {
  std::atomic<bool> armed{false};
  testing::runRanksWrapped(
      kRanks,
      [](runtime::Communicator& comm) {
        const int me = comm.rank(), n = comm.size();
        const size_t count = (1 << 18) + 3;
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
          std::vector<float> buf(count);
          for (size_t j = 0; j < count; ++j) buf[j] = static_cast<float>(testing::inputValue(me, j, op));
          ASSERT_TRUE(waitFor(comm.allreduce(buf.data(), buf.data(), count, DataType::kF32, op)).isOk());
          size_t wrong = 0;
          for (size_t j = 0; j < count; ++j)
            wrong += !testing::closeEnough(buf[j], testing::reduceReference(n, j, op, DataType::kF32), DataType::kF32);
          EXPECT_EQ(wrong, 0u) << "allreduce, rank " << me;
        }
        std::vector<int64_t> mine(1000), all(1000 * n);
        for (size_t j = 0; j < mine.size(); ++j) mine[j] = me * 100000 + static_cast<int64_t>(j);
        ASSERT_TRUE(waitFor(comm.allgather(mine.data(), all.data(), mine.size(), DataType::kI64)).isOk());
        for (int r = 0; r < n; ++r) EXPECT_EQ(all[r * 1000 + 7], r * 100000 + 7);
        std::vector<int64_t> b(5000, me == 2 ? 42 : -1);
        ASSERT_TRUE(waitFor(comm.broadcast(b.data(), b.data(), b.size(), DataType::kI64, 2)).isOk());
        EXPECT_EQ(std::count(b.begin(), b.end(), 42), 5000);
        ASSERT_TRUE(waitFor(comm.barrier()).isOk());
      },
      [](int rank) { return sealedOnOwnHost(rank, GetParam()); },
      [&armed](transport::Transport& ucx) { return std::make_unique<FlipTap>(ucx, armed); });
}

TEST_P(SealedDataPlane, AByteFlippedOnTheWireFailsTheCollectiveNamingTheSender) {
  std::atomic<bool> armed{false};
  std::mutex mutex;
  std::vector<Status> outcomes(kRanks);
  std::vector<bool> right(kRanks);
  std::condition_variable everyoneRecorded;
  int recorded = 0;
  testing::runRanksWrapped(
      kRanks,
      [&](runtime::Communicator& comm) {
        std::vector<float> buf((1 << 18) + 3, 1.0f);
        ASSERT_TRUE(waitFor(comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::kF32, ReduceOp::kSum)).isOk());
        // Rank 0 can leave the barrier while another rank still waits in it; that rank's
        // barrier then fails by rank 0's abort notice, which counts as its outcome.
        Status st = waitFor(comm.barrier());
        if (comm.rank() == kVictim) {
          ASSERT_TRUE(st.isOk()) << st.message();
          armed = true;  // after its barrier: the next allreduce's message
        }
        if (st.isOk()) st = waitFor(comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::kF32, ReduceOp::kSum));
        std::unique_lock<std::mutex> lock(mutex);
        outcomes[comm.rank()] = st;
        right[comm.rank()] = std::all_of(buf.begin(), buf.end(), [](float v) { return v == 16.0f; });
        // Stay until every rank has its outcome: a rank that has what it needs and leaves
        // destroys its communicator, and rank 0 could hear of that before it reads the
        // tampered message still on its way from that rank.
        ++recorded;
        everyoneRecorded.notify_all();
        everyoneRecorded.wait_for(lock, std::chrono::seconds(30), [&] { return recorded == kRanks; });
      },
      [](int rank) { return sealedOnOwnHost(rank, GetParam()); },
      [&armed](transport::Transport& ucx) { return std::make_unique<FlipTap>(ucx, armed); });
  ASSERT_FALSE(armed) << "no message to rank 0 was flipped";
  // The receiving rank fails; the others fail too (its abort notice), or, if they had what
  // they needed before, return the right result: never a wrong one.
  EXPECT_FALSE(outcomes[kVictim].isOk()) << "rank 0 returned a result from a tampered message";
  for (int r = 0; r < kRanks; ++r)
    EXPECT_TRUE(!outcomes[r].isOk() || right[r]) << "rank " << r << " returned a wrong result";
  const std::string& m = outcomes[kVictim].message();
  EXPECT_NE(m.find("message from rank " + std::to_string(FlipTap::flippedFrom.load()) + " ("), std::string::npos) << m;
  EXPECT_NE(m.find("does not authenticate"), std::string::npos) << m;
}

INSTANTIATE_TEST_SUITE_P(Path, SealedDataPlane, ::testing::Values("off", "on"),
                         [](const auto& info) { return info.param == "on" ? "ReduceOnArrival" : "Receive"; });

// Ranks that disagree on TSR_SECURE could not read each other's messages: creation fails on
// every rank with TSR_ERR_MISMATCH naming the values and the ranks (the first collective
// failed instead, as "a malformed header").
TEST(SealedDataPlaneSettings, RanksThatDisagreeFailCreationOnEveryRank) {
  const int n = 3;
  auto reserved = PortReservation::reserve(n, true);
  ASSERT_TRUE(reserved.isOk()) << reserved.status().toString();
  const std::vector<uint16_t> ports = reserved.value().ports();
  std::vector<Status> created(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      runtime::Config config;
      ASSERT_TRUE(config.set("TSR_SECURE", r == 0 ? "encrypt" : "off").isOk());
      ASSERT_TRUE(config.set("TSR_TEST_HOST_ID", "h" + std::to_string(r)).isOk());
      auto comm = runtime::Communicator::create(testing::threadLaunchInfo(r, n, ports), config);
      created[r] = comm.status();
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(created[r].code(), Code::kMismatch) << "rank " << r << ": " << created[r].toString();
    EXPECT_NE(
        created[r].message().find("TSR_SECURE differs between ranks: 'encrypt' on rank(s) 0; 'off' on rank(s) 1, 2"),
        std::string::npos)
        << created[r].message();
  }
}

}  // namespace
}  // namespace tsr
