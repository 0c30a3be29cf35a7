// The sealed data plane (sealed_transport.h) between two ranks over an in-memory wire the test
// can read and change: what crosses the wire is sealed, and a tampered, replayed or re-tagged
// message fails its receive naming the peer. AES-GCM itself and the replay window are tested
// alone first.
#include "transport/sealed_transport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <string>

#include "transport/tag.h"
#include "transport/testing/stub_transport.h"

namespace tsr::transport {
namespace {

LinkKey keyOf(uint8_t seed) {
  LinkKey k;
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<uint8_t>(seed * 31 + i);
  return k;
}

TEST(Sealing, RoundTripsAndRefusesAnyChange) {
  Sealer a(keyOf(1)), b(keyOf(1));
  std::string msg = "a gradient block of some bytes";
  std::vector<char> sealed(msg.size() + kSealOverhead), out(msg.size());
  ASSERT_TRUE(a.seal(7, 0x1234, msg.data(), msg.size(), sealed.data()).isOk());
  EXPECT_EQ(std::string(sealed.data() + kSealSeqBytes, msg.size()).find("gradient"), std::string::npos);
  uint64_t seq = 0;
  ASSERT_TRUE(b.open(0x1234, sealed.data(), sealed.size(), out.data(), &seq).isOk());
  EXPECT_EQ(seq, 7u);
  EXPECT_EQ(std::string(out.data(), out.size()), msg);
  EXPECT_FALSE(b.open(0x1235, sealed.data(), sealed.size(), out.data(), &seq).isOk()) << "another tag";
  for (size_t at : {size_t{0}, kSealSeqBytes + 3, sealed.size() - 1}) {  // seq, body, GCM tag
    std::vector<char> changed = sealed;
    changed[at] ^= 1;
    EXPECT_FALSE(b.open(0x1234, changed.data(), changed.size(), out.data(), &seq).isOk()) << "byte " << at;
  }
  Sealer other(keyOf(2));
  EXPECT_FALSE(other.open(0x1234, sealed.data(), sealed.size(), out.data(), &seq).isOk()) << "another key";
  EXPECT_FALSE(b.open(0x1234, sealed.data(), kSealOverhead - 1, out.data(), &seq).isOk());
  std::vector<char> empty(kSealOverhead);  // an empty message seals too
  ASSERT_TRUE(a.seal(8, 1, nullptr, 0, empty.data()).isOk());
  EXPECT_TRUE(b.open(1, empty.data(), empty.size(), nullptr, &seq).isOk());
}

TEST(ReplayWindow, AcceptsEachNumberOnceInAnyOrderWithinTheWindow) {
  ReplayWindow w;
  EXPECT_TRUE(w.accept(0));
  EXPECT_TRUE(w.accept(2));
  EXPECT_TRUE(w.accept(1));  // late, not seen
  EXPECT_FALSE(w.accept(1));
  EXPECT_FALSE(w.accept(2));
  EXPECT_TRUE(w.accept(10000));
  EXPECT_FALSE(w.accept(10000 - ReplayWindow::kWindow)) << "too old to tell";
  EXPECT_TRUE(w.accept(10000 - ReplayWindow::kWindow + 1));
  EXPECT_FALSE(w.accept(10000 - ReplayWindow::kWindow + 1));
  EXPECT_FALSE(w.accept(0));
}

// Messages in flight between the two ranks, which the test may change before delivery.
struct Wire {
  struct Message {
    int from, to;
    uint64_t tag;
    std::string bytes;
  };
  std::deque<Message> messages;
};

// Sends complete at once onto the wire; receives match (from, tag) in progress().
class WireTransport final : public testing::StubTransport {
 public:
  WireTransport(int rank, Wire& wire) : StubTransport(rank, 2), wire_(wire) {}
  Status send(int peer, uint64_t tag, const void* b, size_t bytes, MemoryType, Completion* c) override {
    wire_.messages.push_back({rank(), peer, tag, std::string(static_cast<const char*>(b), bytes)});
    *c = Completion{};
    c->posted = c->done = true;
    return Status::ok();
  }
  Status recv(int peer, uint64_t tag, uint64_t mask, void* b, size_t bytes, MemoryType, Completion* c) override {
    *c = Completion{};
    c->posted = true;
    pending_.push_back({peer, tag, mask, b, bytes, c});
    return Status::ok();
  }
  bool progress() override {
    bool any = false;
    for (auto r = pending_.begin(); r != pending_.end();) {
      auto m = std::find_if(wire_.messages.begin(), wire_.messages.end(), [&](const Wire::Message& m) {
        return m.to == rank() && m.from == r->peer && (m.tag & r->mask) == (r->tag & r->mask);
      });
      if (m == wire_.messages.end()) {
        ++r;
        continue;
      }
      if (m->bytes.size() > r->bytes)
        r->c->status = Status(Code::kTransport, "message truncated");
      else
        std::memcpy(r->buffer, m->bytes.data(), m->bytes.size());
      r->c->bytes = m->bytes.size();
      r->c->tag = m->tag;
      r->c->done = true;
      wire_.messages.erase(m);
      r = pending_.erase(r);
      any = true;
    }
    return any;
  }

 private:
  struct Pending {
    int peer;
    uint64_t tag, mask;
    void* buffer;
    size_t bytes;
    Completion* c;
  };
  Wire& wire_;
  std::vector<Pending> pending_;
};

// Rank 0 and rank 1 on two hosts (sealed), or on one (sealed = false).
struct Pair {
  explicit Pair(bool sealed = true)
      : w0(0, wire),
        w1(1, wire),
        s0(w0, {LinkKeys{}, LinkKeys{keyOf(1), keyOf(2)}}, {false, sealed}, {"hostA", "hostB"}),
        s1(w1, {LinkKeys{keyOf(2), keyOf(1)}, LinkKeys{}}, {sealed, false}, {"hostA", "hostB"}) {}
  // Rank 0 sends msg with tag; rank 1 receives it (after `between` ran on the wire).
  Status deliver(const std::string& msg, uint64_t tag, std::string* got,
                 const std::function<void(Wire&)>& between = {}) {
    Completion sent, received;
    if (!s0.send(1, tag, msg.data(), msg.size(), MemoryType::kHost, &sent).isOk())
      return Status(Code::kInternal, "send");
    s0.progress();
    if (between) between(wire);
    std::vector<char> buffer(msg.size() + 16);
    Status st = s1.recv(0, tag, ~uint64_t{0}, buffer.data(), buffer.size(), MemoryType::kHost, &received);
    if (!st.isOk()) return st;
    for (int i = 0; i < 10 && !received.done; ++i) s1.progress();
    if (!received.done) return Status(Code::kTimeout, "not delivered");
    got->assign(buffer.data(), received.bytes);
    return received.status;
  }
  Wire wire;
  WireTransport w0, w1;
  SealedTransport s0, s1;
};

TEST(SealedTransport, WhatCrossesTheWireIsSealedAndOpensIntact) {
  Pair p;
  std::string got;
  std::string msg(1000, 'g');
  std::string onWire;
  ASSERT_TRUE(p.deliver(msg, 5, &got, [&](Wire& w) { onWire = w.messages.front().bytes; }).isOk());
  EXPECT_EQ(got, msg);
  EXPECT_EQ(onWire.size(), msg.size() + kSealOverhead);
  EXPECT_EQ(onWire.find("gggggggg"), std::string::npos) << "the plaintext crossed the wire";
}

TEST(SealedTransport, ATamperedMessageFailsItsReceiveNamingThePeer) {
  Pair p;
  std::string got;
  Status st = p.deliver("weights", 5, &got, [](Wire& w) { w.messages.front().bytes[10] ^= 0x40; });
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.code(), Code::kTransport);
  EXPECT_NE(st.message().find("rank 1: message from rank 0 (hostA)"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("does not authenticate"), std::string::npos) << st.message();
  EXPECT_NE(got, "weights");
}

TEST(SealedTransport, AReplayedMessageFailsEvenUnderItsOwnTag) {
  Pair p;
  std::string got, recorded;
  ASSERT_TRUE(p.deliver("first", 5, &got, [&](Wire& w) { recorded = w.messages.front().bytes; }).isOk());
  Status st = p.deliver("second", 5, &got, [&](Wire& w) { w.messages.front().bytes = recorded; });
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("repeats sequence number 0 (a replay)"), std::string::npos) << st.message();
}

TEST(SealedTransport, AMessageMovedToAnotherTagFails) {
  Pair p;
  std::string got, recorded;
  ASSERT_TRUE(p.deliver("for step 5", 5, &got, [&](Wire& w) { recorded = w.messages.front().bytes; }).isOk());
  Status st = p.deliver("for step 6", 6, &got, [&](Wire& w) { w.messages.front().bytes = recorded; });
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("does not authenticate"), std::string::npos) << st.message();
}

// One sealed message holds at most kMaxSealedBytes (OpenSSL takes an int length). A larger one
// is refused on both sides, naming the size, before any staging is allocated: the receiver of
// a message the sender could not seal waited out the timeout. The buffers are never touched.
TEST(SealedTransport, AMessagePastTheSealedLimitIsRefusedOnBothSides) {
  Pair p;
  char byte = 0;
  for (size_t bytes : {kMaxSealedBytes + 1, size_t{1} << 32, (size_t{1} << 32) + 5}) {
    Completion c;
    Status sent = p.s0.send(1, 5, &byte, bytes, MemoryType::kHost, &c);
    ASSERT_FALSE(sent.isOk()) << bytes;
    EXPECT_NE(sent.message().find("message of " + std::to_string(bytes) + " bytes to rank 1 (hostB)"),
              std::string::npos)
        << sent.message();
    EXPECT_NE(sent.message().find("2147483647"), std::string::npos) << sent.message();
    Status consumer = p.s0.sendToConsumer(1, 5, &byte, bytes, &c);
    EXPECT_FALSE(consumer.isOk()) << bytes;
    Status received = p.s1.recv(0, 5, ~uint64_t{0}, &byte, bytes, MemoryType::kHost, &c);
    ASSERT_FALSE(received.isOk()) << bytes;
    EXPECT_NE(received.message().find("message of " + std::to_string(bytes) + " bytes from rank 0 (hostA)"),
              std::string::npos)
        << received.message();
    EXPECT_FALSE(p.s1.recvToConsumer(0, 5, bytes, nullptr, &c).isOk()) << bytes;
    EXPECT_TRUE(p.wire.messages.empty());
  }
  // The refusals left the link as it was: a message that fits still goes through, in sequence.
  std::string got;
  ASSERT_TRUE(p.deliver("small", 5, &got).isOk());
  EXPECT_EQ(got, "small");
}

TEST(SealedTransport, OneHostsMessagesAndControlMessagesPassAsTheyAre) {
  Pair same(false);
  std::string got, onWire;
  ASSERT_TRUE(same.deliver("plain", 5, &got, [&](Wire& w) { onWire = w.messages.front().bytes; }).isOk());
  EXPECT_EQ(onWire, "plain");
  Pair hosts;
  uint64_t control = uint64_t{1} << kTagCtlShift;
  ASSERT_TRUE(hosts.deliver("notice", control, &got, [&](Wire& w) { onWire = w.messages.front().bytes; }).isOk());
  EXPECT_EQ(onWire, "notice") << "control messages carry their own MAC";
  EXPECT_FALSE(hosts.s0.supportsMemoryType(MemoryType::kCuda));
}

}  // namespace
}  // namespace tsr::transport
