// A peer's SparDL message is checked against what the schedule allows before any of it is
// used: here rank 1's transport rewrites the `copies` field of every block it sends (a count
// that wraps this rank's own to zero, or zero itself), and every rank's step fails naming the
// field instead of dividing by zero into its residual.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <mutex>

#include "algorithms/spardl/spardl.h"
#include "algorithms/spardl/sparse_wire.h"
#include "tests/support/thread_world.h"

namespace tsr::spardl {
namespace {

// Forwards everything; when forging, SparDL messages sent by this rank get `copies` in every block.
class CopiesForgingTransport final : public transport::Transport {
 public:
  CopiesForgingTransport(transport::Transport& inner, bool forge, uint32_t copies)
      : inner_(inner), forge_(forge), copies_(copies) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  const std::string& localAddress() const override { return inner_.localAddress(); }
  Status connect(const std::vector<std::string>& a) override { return inner_.connect(a); }
  Status send(int peer, uint64_t tag, const void* b, size_t bytes, transport::MemoryType type,
              transport::Completion* c) override {
    uint32_t magic = 0;
    if (bytes >= kWireHeaderBytes) std::memcpy(&magic, b, sizeof magic);
    if (!forge_ || magic != kWireMagic) return inner_.send(peer, tag, b, bytes, type, c);
    std::lock_guard<std::mutex> lock(mutex_);
    auto& forged = sent_.emplace_back(static_cast<const std::byte*>(b), static_cast<const std::byte*>(b) + bytes);
    uint32_t blocks = 0;
    std::memcpy(&blocks, forged.data() + 20, sizeof blocks);
    for (size_t pos = kWireHeaderBytes, i = 0; i < blocks && pos + kWireBlockHeaderBytes <= bytes; ++i) {
      uint32_t nnz = 0;
      std::memcpy(forged.data() + pos + 4, &copies_, sizeof copies_);
      std::memcpy(&nnz, forged.data() + pos + 8, sizeof nnz);
      pos += kWireBlockHeaderBytes + size_t{nnz} * 8;
    }
    return inner_.send(peer, tag, forged.data(), bytes, type, c);
  }
  Status recv(int peer, uint64_t tag, uint64_t mask, void* b, size_t bytes, transport::MemoryType type,
              transport::Completion* c) override {
    return inner_.recv(peer, tag, mask, b, bytes, type, c);
  }
  void cancel(transport::Completion* c) override { inner_.cancel(c); }
  bool progress() override { return inner_.progress(); }
  bool armEvents() override { return inner_.armEvents(); }
  void sleepUntilEvent(int ms) override { inner_.sleepUntilEvent(ms); }
  void wake() override { inner_.wake(); }
  Status peerStatus(int peer) const override { return inner_.peerStatus(peer); }
  void markPeerLeft(int peer) override { inner_.markPeerLeft(peer); }
  void abandonPendingOnClose() override { inner_.abandonPendingOnClose(); }
  void beginLeaving() override { inner_.beginLeaving(); }
  bool supportsMemoryType(transport::MemoryType type) const override { return inner_.supportsMemoryType(type); }
  uint64_t bytesSent() const override { return inner_.bytesSent(); }

 private:
  transport::Transport& inner_;
  bool forge_;
  uint32_t copies_;
  std::mutex mutex_;
  std::deque<std::vector<std::byte>> sent_;  // alive until the transport is gone
};

// Rank 1 forges; 4 ranks in 2 teams (R-SAG), so blocks are exchanged and their copies added.
void expectEveryRankRefuses(uint32_t forgedCopies) {
  const int n = 4;
  const size_t d = 4096;
  std::vector<std::string> errors(n);
  std::vector<bool> finite(n, true);
  auto wrap = [forgedCopies](transport::Transport& ucx) -> std::unique_ptr<transport::Transport> {
    return std::make_unique<CopiesForgingTransport>(ucx, ucx.rank() == 1, forgedCopies);
  };
  testing::runRanksWrapped(
      n,
      [&](runtime::Communicator& comm) {
        auto t = SparDLTensor::create(comm, "w", d, {{"density", "0.05"}, {"teams", "2"}, {"sag", "r"}});
        ASSERT_TRUE(t.isOk()) << t.status().toString();
        std::vector<float> g(d);
        for (size_t j = 0; j < d; ++j) g[j] = std::sin(0.37f * static_cast<float>(j * (comm.rank() + 1)));
        Status st = t.value()->allreduce(g.data());
        errors[comm.rank()] = st.isOk() ? "" : st.message();
        for (float r : t.value()->residual()) finite[comm.rank()] = finite[comm.rank()] && std::isfinite(r);
      },
      [](int) {
        return testing::Settings{{"TSR_TIMEOUT_MS", "10000"}};
      },
      wrap);
  bool named = false;
  for (int r = 0; r < n; ++r) {
    EXPECT_NE(errors[r], "") << "rank " << r << " took copies=" << forgedCopies;
    EXPECT_TRUE(finite[r]) << "rank " << r << " has a non-finite residual";
    named |= errors[r].find("rank 1 sent block") != std::string::npos &&
             errors[r].find("copies=" + std::to_string(forgedCopies)) != std::string::npos &&
             errors[r].find("the schedule allows 1..2") != std::string::npos;
  }
  EXPECT_TRUE(named) << errors[0] << " | " << errors[1] << " | " << errors[2] << " | " << errors[3];
}

TEST(SparDLPeerTrust, CopiesThatWrapAroundAreRefused) { expectEveryRankRefuses(0xffffffffu); }

TEST(SparDLPeerTrust, ZeroCopiesAreRefused) { expectEveryRankRefuses(0); }

TEST(SparDLPeerTrust, MoreCopiesThanTeamsAreRefused) { expectEveryRankRefuses(3); }

}  // namespace
}  // namespace tsr::spardl
