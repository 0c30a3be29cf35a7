// The argument header rides with a small first message (algorithms/plan/executor.h): one
// message per transfer for small collectives, and mismatched calls still named on both sides
// when only one of them inlines.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "algorithms/dense/dense_plans.h"
#include "algorithms/dense/tests/plan_world.h"
#include "algorithms/plan/executor.h"
#include "transport/tag.h"
#include "transport/testing/stub_transport.h"

namespace tsr::algorithms {
namespace {

using namespace tsr::algorithms::testing;

struct Sent {
  uint32_t msgId;
  size_t bytes;
};

// Records what the executor sends; nothing completes.
class RecordingTransport final : public transport::testing::StubTransport {
 public:
  explicit RecordingTransport(int rank, int size) : StubTransport(rank, size) {}
  std::vector<Sent> sent;
  Status send(int, uint64_t tag, const void*, size_t bytes, transport::MemoryType, transport::Completion* c) override {
    c->posted = true;
    sent.push_back({static_cast<uint32_t>(tag & transport::kTagMsgMask), bytes});
    return Status::ok();
  }
  Status recv(int, uint64_t, uint64_t, void*, size_t, transport::MemoryType, transport::Completion* c) override {
    c->posted = true;
    return Status::ok();
  }
  void cancel(transport::Completion* c) override { c->done = true; }
};

std::vector<Sent> firstSends(size_t count) {
  auto plan = doublingAllreducePlan(0, 2, count, DataType::kF32, ReduceOp::kSum, {});
  EXPECT_TRUE(plan.isOk()) << plan.status().toString();
  std::vector<float> in(count + 1), out(count + 1);
  RecordingTransport transport(0, 2);
  PlanExecutor executor(plan.take(), {in.data(), out.data(), nullptr}, {0, 1, 7}, transport);
  EXPECT_EQ(executor.start().code(), Code::kInProgress);
  executor.abort(Status(Code::kAborted, "test over"));
  return transport.sent;
}

TEST(HeaderInline, SmallFirstMessageCarriesTheHeader) {
  auto sent = firstSends(2);
  ASSERT_EQ(sent.size(), 1u) << "a separate header was sent";
  EXPECT_EQ(sent[0].msgId, transport::kHeaderMessageId);
  EXPECT_EQ(sent[0].bytes, sizeof(WireHeader) + 8);
}

TEST(HeaderInline, LargeFirstMessageGoesAfterItsOwnHeader) {
  size_t count = PlanExecutor::kInlineBytes / 4 + 1;
  auto sent = firstSends(count);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].msgId, transport::kHeaderMessageId);
  EXPECT_EQ(sent[0].bytes, sizeof(WireHeader));
  EXPECT_NE(sent[1].msgId, transport::kHeaderMessageId);
  EXPECT_EQ(sent[1].bytes, count * 4);
}

// A barrier's rounds are empty messages: each is its round's header alone (one message per
// round, not a header and then an empty message). Round 0 goes at once; the later ones wait
// for the round before to be heard, so nothing else is sent yet.
TEST(HeaderInline, AnEmptyFirstMessageIsTheHeaderItself) {
  auto plan = disseminationBarrierPlan(0, 4);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  RecordingTransport transport(0, 4);
  PlanExecutor executor(plan.take(), {nullptr, nullptr, nullptr}, {0, 1, 7}, transport);
  EXPECT_EQ(executor.start().code(), Code::kInProgress);
  executor.abort(Status(Code::kAborted, "test over"));
  ASSERT_EQ(transport.sent.size(), 1u);
  EXPECT_EQ(transport.sent[0].msgId, transport::kHeaderMessageId);
  EXPECT_EQ(transport.sent[0].bytes, sizeof(WireHeader));
}

// Holds every receive the executor posts, for the test to complete in the order it chooses.
class ScriptedTransport final : public transport::testing::StubTransport {
 public:
  struct Posted {
    uint32_t msgId;
    void* buffer;
    transport::Completion* completion;
  };
  explicit ScriptedTransport(int rank, int size) : StubTransport(rank, size) {}
  std::vector<Posted> recvs;
  Status send(int, uint64_t, const void*, size_t, transport::MemoryType, transport::Completion* c) override {
    c->posted = true;
    return Status::ok();
  }
  Status recv(int, uint64_t tag, uint64_t, void* buffer, size_t, transport::MemoryType,
              transport::Completion* c) override {
    c->posted = true;
    recvs.push_back({static_cast<uint32_t>(tag & transport::kTagMsgMask), buffer, c});
    return Status::ok();
  }
  void cancel(transport::Completion* c) override { c->done = true; }
};

// The peer's data overtakes its header, and is larger than this rank expects, so its receive
// fails in the transport: the run waits for the header and names the field that differs
// rather than the transport's "message larger than the receive buffer".
TEST(HeaderInline, AnOvertakingLargerMessageIsNamedByTheHeaderThatFollows) {
  const size_t count = PlanExecutor::kInlineBytes;  // not inlined: data and header travel apart
  auto plan = doublingAllreducePlan(0, 2, count, DataType::kF32, ReduceOp::kSum, {});
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  const CollectiveKind collective = plan.value()->collective;
  std::vector<float> in(count), out(count);
  ScriptedTransport transport(0, 2);
  PlanExecutor executor(plan.take(), {in.data(), out.data(), nullptr}, {0, 1, 7}, transport);
  ASSERT_EQ(executor.start().code(), Code::kInProgress);
  const ScriptedTransport::Posted* header = nullptr;
  const ScriptedTransport::Posted* data = nullptr;
  for (const auto& r : transport.recvs) (r.msgId == transport::kHeaderMessageId ? header : data) = &r;
  ASSERT_TRUE(header && data) << transport.recvs.size() << " receives posted";

  data->completion->status = Status(Code::kMismatch, "receive: message larger than the receive buffer");
  data->completion->done = true;
  EXPECT_EQ(executor.progress().code(), Code::kInProgress) << "failed before the header came";

  WireHeader theirs;
  theirs.collective = static_cast<uint8_t>(collective);
  theirs.dtype = static_cast<uint8_t>(DataType::kF32);
  theirs.op = static_cast<uint8_t>(ReduceOp::kSum);
  theirs.sender = 1;
  theirs.count = count + 1;
  std::memcpy(header->buffer, &theirs, sizeof theirs);
  header->completion->bytes = sizeof theirs;
  header->completion->done = true;
  Status st = executor.progress();
  EXPECT_EQ(st.code(), Code::kMismatch) << st.toString();
  EXPECT_NE(st.message().find("count differs"), std::string::npos) << st.toString();
  executor.abort(Status(Code::kAborted, "test over"));
}

// Over UCX: rank 1 calls with a count whose first message is too large to inline, the others
// with a small one (and the other way round); both sides of each differing pair name the count.
class HeaderInlineMismatch : public ::testing::TestWithParam<int> {};

TEST_P(HeaderInlineMismatch, IsNamedWhenOnlyOneSideInlines) {
  int n = GetParam();
  World& world = worldOf(n);
  // large: a first (ring block) message of 2800 bytes, above kInlineBytes yet sent eagerly,
  // so no send is left waiting for a receive that never comes.
  const size_t small = 50, large = 700 * static_cast<size_t>(n);
  static_assert(2800 > PlanExecutor::kInlineBytes);
  for (bool rankOneLarge : {true, false}) {
    std::vector<std::vector<float>> in(n, std::vector<float>(large)), out = in;
    std::vector<std::shared_ptr<Plan>> plans;
    std::vector<RunBuffers> bufs;
    for (int r = 0; r < n; ++r) {
      size_t count = (r == 1) == rankOneLarge ? large : small;
      plans.push_back(ringAllreducePlan(r, n, count, DataType::kF32, ReduceOp::kSum, {}).take());
      bufs.push_back({in[r].data(), out[r].data(), nullptr});
    }
    auto st = runAll(world, plans, bufs);
    for (int r : {1, 2 % n}) {
      EXPECT_EQ(st[r].code(), Code::kMismatch) << "rank " << r << ": " << st[r].toString();
      EXPECT_NE(st[r].message().find("count differs"), std::string::npos) << st[r].toString();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, HeaderInlineMismatch, ::testing::Values(2, 3, 5));

}  // namespace
}  // namespace tsr::algorithms
