// Control messages (abort, mismatch and goodbye notices) from outside the job: a UCX worker
// that is no rank reaches the ranks' worker addresses and posts notices with a forged sender,
// as anyone on the network who learns an address could. They must change nothing; a genuine
// abort must still end the job everywhere. Ranks as threads over real UCX.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/thread_world.h"
#include "transport/tag.h"
#include "transport/testing/forwarding_transport.h"
#include "transport/ucx_transport.h"

namespace tsr {
namespace {

using namespace std::chrono_literals;
using runtime::Communicator;

constexpr int kRanks = 3;

// Ring collectives: messages over UCX (not the one-host shared-memory board).
testing::Settings settings(int) { return {{"TSR_ALGO", "ring"}, {"TSR_TIMEOUT_MS", "20000"}}; }

// Every rank's UCX worker address, as the job's transports have them.
class AddressBook {
 public:
  void add(int rank, const std::string& address) {
    std::lock_guard<std::mutex> lock(mutex_);
    addresses_.resize(kRanks);
    addresses_[rank] = address;
  }
  std::vector<std::string> all() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return addresses_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> addresses_;
};

// A control message as a rank sent it: to whom, with which tag, which bytes.
struct Recorded {
  int to;
  uint64_t tag;
  std::string bytes;
};

// Forwards to the UCX transport and records every control message this rank sends.
class ControlTap final : public transport::testing::ForwardingTransport {
 public:
  ControlTap(transport::Transport& inner, std::mutex& mutex, std::vector<Recorded>& out)
      : ForwardingTransport(inner), mutex_(mutex), out_(out) {}
  Status send(int peer, uint64_t tag, const void* b, size_t bytes, transport::MemoryType type,
              transport::Completion* c) override {
    if (tag >> transport::kTagCtlShift & 1) {
      std::lock_guard<std::mutex> lock(mutex_);
      out_.push_back({peer, tag, std::string(static_cast<const char*>(b), bytes)});
    }
    return inner_.send(peer, tag, b, bytes, type, c);
  }

 private:
  std::mutex& mutex_;
  std::vector<Recorded>& out_;
};

// A UCX worker outside the job with endpoints to every rank's worker address.
class Stranger {
 public:
  explicit Stranger(std::vector<std::string> addresses) {
    addresses.push_back("");  // its own slot, after the job's ranks
    auto t = transport::UcxTransport::create(kRanks, kRanks + 1);
    if (!t.isOk()) {
      ADD_FAILURE() << t.status().toString();
      return;
    }
    transport_ = t.take();
    Status st = transport_->connect(addresses);
    if (!st.isOk()) ADD_FAILURE() << st.toString();
  }
  // Posts `bytes` to rank `to` as control message with `tag`.
  void send(int to, uint64_t tag, std::string bytes) {
    if (!transport_) return;
    sends_.push_back({std::move(bytes), {}});
    auto& [payload, completion] = sends_.back();
    Status st = transport_->send(to, tag, payload.data(), payload.size(), transport::MemoryType::kHost, &completion);
    if (!st.isOk()) ADD_FAILURE() << st.toString();
  }
  // Drives the worker until every message is out.
  void flush() {
    auto until = std::chrono::steady_clock::now() + 5s;
    auto allDone = [&] {
      for (auto& s : sends_)
        if (!s.second.done) return false;
      return true;
    };
    while (transport_ && !allDone() && std::chrono::steady_clock::now() < until) transport_->progress();
    EXPECT_TRUE(allDone()) << "the stranger's messages did not go out";
    for (auto& s : sends_) EXPECT_TRUE(s.second.status.isOk()) << s.second.status.toString();
  }

 private:
  std::unique_ptr<transport::UcxTransport> transport_;
  std::deque<std::pair<std::string, transport::Completion>> sends_;  // stable addresses
};

// An allreduce over every rank whose sum is checked.
void expectSum(Communicator& comm, int round) {
  std::vector<int64_t> x(1000, comm.rank() + round), out(1000, -1);
  auto req = comm.allreduce(x.data(), out.data(), x.size(), DataType::kI64, ReduceOp::kSum);
  ASSERT_TRUE(req.isOk()) << "rank " << comm.rank() << ": " << req.status().toString();
  Status st = req.value()->wait();
  ASSERT_TRUE(st.isOk()) << "rank " << comm.rank() << " round " << round << ": " << st.toString();
  const int64_t want = kRanks * (kRanks - 1) / 2 + int64_t{kRanks} * round;
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], want) << "rank " << comm.rank() << " at " << i;
}

Status waitUntilBroken(Communicator& comm) {
  auto until = std::chrono::steady_clock::now() + 10s;
  while (comm.health().isOk() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
  return comm.health();
}

Communicator::TransportWrapper noting(AddressBook& book) {
  return [&book](transport::Transport& ucx) -> std::unique_ptr<transport::Transport> {
    book.add(ucx.rank(), ucx.localAddress());
    return nullptr;  // the communicator then uses UCX itself
  };
}

// Notices in the plain format, a bare "goodbye" and junk in place of a MAC, each claiming to
// come from another rank of the job, sent to every rank while the others wait in a collective.
TEST(ControlAuth, StrangersForgedAbortAndGoodbyeLeaveTheJobRunning) {
  AddressBook book;
  testing::runRanksWrapped(
      kRanks,
      [&](Communicator& comm) {
        expectSum(comm, 1);  // every rank is up, so the book is complete
        if (comm.rank() == 0) {
          Stranger stranger(book.all());
          for (int to = 0; to < kRanks; ++to) {
            uint64_t tag = transport::makeControlTag((to + 1) % kRanks, 0);
            stranger.send(to, tag, "1\n-1:-1\nforged by a stranger");
            stranger.send(to, tag, "4\n2:2\nforged mismatch");
            stranger.send(to, tag, "goodbye");
            stranger.send(to, tag, std::string(80, 'x'));
          }
          stranger.flush();
          std::this_thread::sleep_for(500ms);  // the ranks' progress threads have read them
        }
        for (int round = 2; round < 6; ++round) expectSum(comm, round);
        auto b = comm.barrier();
        ASSERT_TRUE(b.isOk());
        EXPECT_TRUE(b.value()->wait().isOk());
        EXPECT_TRUE(comm.health().isOk()) << "rank " << comm.rank() << ": " << comm.health().toString();
      },
      settings, noting(book));
}

// A genuine abort still ends the job on every rank, naming the rank that aborted.
TEST(ControlAuth, GenuineAbortStillEndsTheJobOnEveryRank) {
  std::latch summed(kRanks);  // the abort must not cut the first collective short
  testing::runRanksEach(
      kRanks,
      [&](Communicator& comm) {
        expectSum(comm, 1);
        summed.arrive_and_wait();
        if (comm.rank() == 1) comm.abort("the loss diverged");
        Status health = waitUntilBroken(comm);
        EXPECT_EQ(health.code(), Code::kAborted) << "rank " << comm.rank() << ": " << health.toString();
        EXPECT_NE(health.message().find("rank 1 aborted: the loss diverged"), std::string::npos)
            << "rank " << comm.rank() << ": " << health.toString();
        std::vector<float> x(16, 1.0f);
        auto req = comm.allreduce(x.data(), x.data(), x.size(), DataType::kF32, ReduceOp::kSum);
        EXPECT_FALSE(req.isOk() && req.value()->wait().isOk()) << "rank " << comm.rank();
      },
      settings);
}

// Genuine notices and goodbyes recorded in one communicator, replayed to the same ranks of the
// next one (same job id, same secret) by a stranger: dropped, the new job runs on.
TEST(ControlAuth, GenuineNoticesReplayedIntoTheNextCommunicatorAreDropped) {
  std::mutex mutex;
  std::vector<Recorded> recorded;
  std::latch summed(kRanks);
  testing::runRanksWrapped(
      kRanks,
      [&](Communicator& comm) {
        expectSum(comm, 1);
        summed.arrive_and_wait();
        if (comm.rank() == 2) comm.abort("recorded");
        EXPECT_FALSE(waitUntilBroken(comm).isOk());
      },
      settings, [&](transport::Transport& ucx) { return std::make_unique<ControlTap>(ucx, mutex, recorded); });
  ASSERT_GE(recorded.size(), 2u * (kRanks - 1)) << "the abort and the goodbyes were recorded";

  AddressBook book;
  testing::runRanksWrapped(
      kRanks,
      [&](Communicator& comm) {
        expectSum(comm, 1);
        if (comm.rank() == 0) {
          Stranger stranger(book.all());
          for (const Recorded& r : recorded) stranger.send(r.to, r.tag, r.bytes);
          stranger.flush();
          std::this_thread::sleep_for(500ms);
        }
        for (int round = 2; round < 5; ++round) expectSum(comm, round);
        EXPECT_TRUE(comm.health().isOk()) << "rank " << comm.rank() << ": " << comm.health().toString();
      },
      settings, noting(book));
}

}  // namespace
}  // namespace tsr
