// Marsit's pipelined packing without a network:
//  * PiecewisePrepare over pieces in any order gives signPrepare's whole-vector results bit for
//    bit (work, words, first non-finite index, sum |g + c|), on every instruction set;
//  * the ring and torus plans pack in kLocal ops that partition the words, the first send
//    waits for its own chunk's pack and nothing else (that pack comes first), and every merge
//    waits for the pack of the words it merges into;
//  * the executor posts a chunk's send right after packing it, before packing the next one;
//  * two-level: PiecewisePrepare::account over pieces that run on into padding gives the
//    block's whole scan and sum; the bits plan's packs cover exactly this rank's row block,
//    and its first send waits only for its own chunk's pack.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "algorithms/dense/dense_plans.h"
#include "algorithms/kernels/sign.h"
#include "algorithms/kernels/sign_ops.h"
#include "algorithms/kernels/tests/isa_sweep.h"
#include "algorithms/marsit/hier_plan.h"
#include "algorithms/marsit/marsit_plan.h"
#include "algorithms/marsit/piecewise_prepare.h"
#include "algorithms/plan/executor.h"
#include "transport/testing/stub_transport.h"

namespace tsr::marsit {
namespace {

using algorithms::OpKind;
using algorithms::Plan;
using algorithms::PlanOp;

std::vector<float> normals(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = dist(gen);
  return x;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(PiecewisePrepare, AnyPiecesInAnyOrderGiveTheWholeVectorsBits) {
  std::mt19937 gen(5);
  for (size_t n : {size_t{1}, size_t{1000}, size_t{64 * 16 * 5 + 37}, size_t{100003}}) {
    for (bool withNan : {false, true}) {
      std::vector<float> g = normals(n, 1), c = normals(n, 2);
      for (size_t j = 0; j < n; j += 7) c[j] = -g[j];  // exact zeros: coins keyed by word
      if (withNan && n > 900) g[n - 800] = std::nanf(""), g[n - 900] = INFINITY;
      // A huge first block: each later block's sum alone is under half its last bit, their
      // total is not, so adding the blocks' sums in any other order gives another double
      // (with blocks alike, any order gives the same sum and the test could not tell).
      for (size_t j = 0; j < n; ++j) {
        float scale = j < 1024 ? 0x1p60f : 16.0f;
        g[j] *= scale, c[j] *= scale;
      }
      if (n == 100003 && !withNan) {  // the test's premise: adding the blocks' sums in reverse differs
        std::vector<float> x(n);
        for (size_t j = 0; j < n; ++j) x[j] = g[j] + c[j];
        double forward = 0, backward = 0;
        for (size_t b = 0; b * 1024 < n; ++b)
          forward += kernels::sumAbs(x.data() + b * 1024, std::min<size_t>(1024, n - b * 1024));
        for (size_t b = (n + 1023) / 1024; b-- > 0;)
          backward += kernels::sumAbs(x.data() + b * 1024, std::min<size_t>(1024, n - b * 1024));
        ASSERT_NE(forward, backward);
      }
      kernels::RngStream rng{9, 3, 4};
      kernels::testing::forEachIsa([&](kernels::Isa) {
        const size_t words = kernels::wordsForElements(n);
        std::vector<float> refWork(n), work(n);
        std::vector<uint64_t> refWords(words), got(words);
        double refSum = -1;
        size_t refBad = kernels::signPrepare(g.data(), c.data(), n, refWork.data(), refWords.data(), rng, 0, &refSum);
        // Word boundaries at random (most not on 1024-element blocks), pieces shuffled.
        std::vector<size_t> cuts{0, words};
        for (int k = 0; k < 9; ++k) cuts.push_back(std::uniform_int_distribution<size_t>(0, words)(gen));
        std::sort(cuts.begin(), cuts.end());
        std::vector<std::pair<size_t, size_t>> pieces;
        for (size_t k = 0; k + 1 < cuts.size(); ++k) {
          if (cuts[k] < cuts[k + 1]) pieces.push_back({cuts[k] * 64, std::min(n, cuts[k + 1] * 64)});
        }
        std::shuffle(pieces.begin(), pieces.end(), gen);
        PiecewisePrepare prep;
        prep.reset(n);
        for (auto [begin, end] : pieces) prep.prepare(g.data(), c.data(), begin, end, work.data(), got.data(), rng);
        EXPECT_EQ(prep.prepared(), n);
        EXPECT_EQ(prep.firstBad(), refBad) << n;
        EXPECT_EQ(got, refWords) << n;
        EXPECT_TRUE(sameBits(work, refWork)) << n;
        if (!withNan) {
          EXPECT_EQ(prep.sumAbs(work.data()), refSum) << n << " pieces " << pieces.size();
        }
      });
    }
  }
}

// Two-level blocks: the work is computed already, pieces end on word boundaries past the real
// elements (padding, neither scanned nor summed), in any order.
TEST(PiecewisePrepare, AccountedPiecesGiveTheWholeBlocksScanAndSum) {
  std::mt19937 gen(7);
  for (size_t real : {size_t{0}, size_t{1000}, size_t{64 * 16 * 5 + 37}, size_t{100003}}) {
    for (bool withNan : {false, true}) {
      const size_t words = kernels::wordsForElements(real) + 3, n = words * 64;
      std::vector<float> work = normals(n, 3);
      for (size_t j = 0; j < n; ++j) work[j] *= j < 1024 ? 0x1p60f : 16.0f;      // block order matters
      for (size_t j = real; j < n; ++j) work[j] = j % 2 ? 0.0f : std::nanf("");  // never looked at
      if (withNan && real > 900) work[real - 800] = -INFINITY, work[real - 900] = std::nanf("");
      std::vector<size_t> cuts{0, words};
      for (int k = 0; k < 9; ++k) cuts.push_back(std::uniform_int_distribution<size_t>(0, words)(gen));
      std::sort(cuts.begin(), cuts.end());
      std::vector<std::pair<size_t, size_t>> pieces;
      for (size_t k = 0; k + 1 < cuts.size(); ++k)
        if (cuts[k] < cuts[k + 1]) pieces.push_back({cuts[k] * 64, cuts[k + 1] * 64});
      std::shuffle(pieces.begin(), pieces.end(), gen);
      PiecewisePrepare prep;
      prep.reset(real);
      for (auto [begin, end] : pieces) prep.account(work.data(), begin, end);
      EXPECT_EQ(prep.prepared(), real);
      EXPECT_EQ(prep.firstBad(), kernels::firstNonFinite(work.data(), real)) << real;
      if (!withNan) {
        EXPECT_EQ(prep.sumAbs(work.data()), kernels::sumAbs(work.data(), real)) << real;
      }
    }
  }
}

// Ring or torus plans of every rank for the shapes below, packed chunk by chunk.
struct PlanCase {
  int n;
  int rows;  // 0: ring; else a rows x n/rows torus
};

std::vector<std::shared_ptr<Plan>> plansOf(const PlanCase& pc, size_t words) {
  algorithms::DenseOptions options;
  options.chunkBytes = 1024;  // several chunks per block
  std::vector<std::vector<int>> grid;
  for (int r = 0; pc.rows && r < pc.rows; ++r) {
    grid.emplace_back();
    for (int c = 0; c < pc.n / pc.rows; ++c) grid.back().push_back(r * (pc.n / pc.rows) + c);
  }
  std::vector<std::shared_ptr<Plan>> plans;
  for (int rank = 0; rank < pc.n; ++rank) {
    auto plan = pc.rows ? algorithms::torusSignMergePlan(rank, pc.n, words, grid, options, true)
                        : marsitRingPlan(rank, pc.n, words, options, true);
    EXPECT_TRUE(plan.isOk()) << plan.status().toString();
    if (!plan.isOk()) return {};
    plans.push_back(plan.take());
  }
  return plans;
}

class PipelinedPlan : public ::testing::TestWithParam<PlanCase> {};

TEST_P(PipelinedPlan, FirstSendWaitsOnlyForItsOwnChunksPack) {
  const PlanCase pc = GetParam();
  for (size_t words : {size_t{2}, size_t{157}, size_t{1563}}) {  // 1563 words: 100003 elements
    auto plans = plansOf(pc, words);
    ASSERT_EQ(plans.size(), static_cast<size_t>(pc.n));
    for (int rank = 0; rank < pc.n; ++rank) {
      const Plan& p = *plans[rank];
      SCOPED_TRACE("rank " + std::to_string(rank) + " words " + std::to_string(words));
      auto wordOf = [](const algorithms::BufferRef& ref) { return ref.offset / sizeof(uint64_t); };
      // The packs cover every word exactly once.
      std::vector<int> covered(words, 0);
      std::vector<uint32_t> packs;
      for (uint32_t i = 0; i < p.ops.size(); ++i)
        if (p.ops[i].kind == OpKind::kLocal) {
          packs.push_back(i);
          for (size_t w = 0; w < p.ops[i].count; ++w) ++covered[wordOf(p.ops[i].dst) + w];
        }
      ASSERT_FALSE(packs.empty());
      EXPECT_TRUE(std::all_of(covered.begin(), covered.end(), [](int k) { return k == 1; }));
      if (words < static_cast<size_t>(pc.n)) continue;  // empty blocks: the first send may be a later step's
      auto sendIt = std::find_if(p.ops.begin(), p.ops.end(), [](const PlanOp& op) { return op.kind == OpKind::kSend; });
      ASSERT_NE(sendIt, p.ops.end());
      // The first send depends on one op: the first pack, which packs exactly its words.
      ASSERT_EQ(sendIt->deps.size(), 1u);
      const PlanOp& pack = p.ops[sendIt->deps[0]];
      EXPECT_EQ(sendIt->deps[0], packs[0]);
      EXPECT_EQ(pack.kind, OpKind::kLocal);
      EXPECT_EQ(wordOf(pack.dst), wordOf(sendIt->src));
      EXPECT_EQ(pack.count, sendIt->count);
      // A merge into words waits for their pack (else it would merge into stale bits).
      for (const PlanOp& op : p.ops) {
        if (op.kind != OpKind::kRecvMerge || op.mergeRound != 0) continue;
        bool waits = std::any_of(op.deps.begin(), op.deps.end(), [&](uint32_t d) {
          return p.ops[d].kind == OpKind::kLocal && wordOf(p.ops[d].dst) == wordOf(op.dst) &&
                 p.ops[d].count == op.count;
        });
        EXPECT_TRUE(waits) << "merge into word " << wordOf(op.dst);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PipelinedPlan,
                         ::testing::Values(PlanCase{2, 0}, PlanCase{3, 0}, PlanCase{4, 0}, PlanCase{5, 0},
                                           PlanCase{6, 0}, PlanCase{7, 0}, PlanCase{4, 2}, PlanCase{6, 2},
                                           PlanCase{6, 3}),
                         [](const ::testing::TestParamInfo<PlanCase>& info) {
                           return (info.param.rows ? "torus" : "ring") + std::to_string(info.param.n) +
                                  (info.param.rows ? "x" + std::to_string(info.param.rows) : "");
                         });

// Two-level bits plans (rows = hosts), packed chunk by chunk: the packs cover exactly this
// rank's row block, the first send (the column ring's) waits only for its own chunk's pack,
// and every column merge waits for the pack of the words it merges into.
TEST(PipelinedHierPlan, FirstSendWaitsOnlyForItsOwnChunksPack) {
  algorithms::DenseOptions options;
  options.chunkBytes = 1024;
  for (auto [hosts, x] : {std::pair{2, 2}, std::pair{3, 2}, std::pair{2, 3}}) {
    const int n = hosts * x;
    std::vector<std::vector<int>> grid(hosts);
    for (int r = 0; r < n; ++r) grid[r % hosts].push_back(r);  // a host's ranks not neighbours
    for (size_t count : {size_t{1000}, size_t{100003}}) {
      for (int rank = 0; rank < n; ++rank) {
        SCOPED_TRACE("grid " + std::to_string(hosts) + "x" + std::to_string(x) + " rank " + std::to_string(rank) +
                     " count " + std::to_string(count));
        auto hier = marsitHierPlans(rank, n, count, DataType::kF32, grid, options, true);
        ASSERT_TRUE(hier.isOk()) << hier.status().toString();
        const Plan& p = *hier.value().bits;
        const size_t words = hier.value().padded / 64, first = hier.value().shardOffset / 64;
        const size_t shardWords = hier.value().shardCount / 64;
        auto wordOf = [](const algorithms::BufferRef& ref) { return ref.offset / sizeof(uint64_t); };
        std::vector<int> covered(words, 0);
        std::vector<uint32_t> packs;
        for (uint32_t i = 0; i < p.ops.size(); ++i)
          if (p.ops[i].kind == OpKind::kLocal) {
            packs.push_back(i);
            for (size_t w = 0; w < p.ops[i].count; ++w) ++covered[wordOf(p.ops[i].dst) + w];
          }
        ASSERT_GE(packs.size(), static_cast<size_t>(hosts));  // a column block at least
        if (count > 10000) {
          ASSERT_GT(packs.size(), static_cast<size_t>(hosts));  // blocks in chunks
        }
        for (size_t w = 0; w < words; ++w)
          ASSERT_EQ(covered[w], w >= first && w < first + shardWords ? 1 : 0) << "word " << w;
        auto sendIt =
            std::find_if(p.ops.begin(), p.ops.end(), [](const PlanOp& op) { return op.kind == OpKind::kSend; });
        ASSERT_NE(sendIt, p.ops.end());
        ASSERT_EQ(sendIt->deps.size(), 1u);
        const PlanOp& pack = p.ops[sendIt->deps[0]];
        EXPECT_EQ(sendIt->deps[0], packs[0]);
        EXPECT_EQ(pack.kind, OpKind::kLocal);
        EXPECT_EQ(wordOf(pack.dst), wordOf(sendIt->src));
        EXPECT_EQ(pack.count, sendIt->count);
        size_t merges = 0;
        for (const PlanOp& op : p.ops) {
          if (op.kind != OpKind::kRecvMerge) continue;
          ++merges;
          bool waits = std::any_of(op.deps.begin(), op.deps.end(), [&](uint32_t d) {
            return p.ops[d].kind == OpKind::kLocal && wordOf(p.ops[d].dst) == wordOf(op.dst) &&
                   p.ops[d].count == op.count;
          });
          EXPECT_TRUE(waits) << "merge into word " << wordOf(op.dst);
        }
        EXPECT_GT(merges, 0u);
        // pack=whole: no packs, the first send waits for the plan's start.
        auto whole = marsitHierPlans(rank, n, count, DataType::kF32, grid, options, false);
        ASSERT_TRUE(whole.isOk());
        EXPECT_TRUE(std::none_of(whole.value().bits->ops.begin(), whole.value().bits->ops.end(),
                                 [](const PlanOp& op) { return op.kind == OpKind::kLocal; }));
      }
    }
  }
}

// Records what the executor posts; nothing ever completes.
class RecordingTransport final : public transport::testing::StubTransport {
 public:
  // Logs sends from [lo, hi) (the words; not the executor's headers).
  RecordingTransport(std::vector<std::string>* l, const void* lo, const void* hi)
      : StubTransport(0, 4), log(l), lo_(lo), hi_(hi) {}
  std::vector<std::string>* log;
  Status send(int, uint64_t, const void* buffer, size_t, transport::MemoryType, transport::Completion* c) override {
    c->posted = true;
    if (std::less_equal<const void*>()(lo_, buffer) && std::less<const void*>()(buffer, hi_))
      log->push_back("send " + std::to_string(reinterpret_cast<uintptr_t>(buffer)));
    return Status::ok();
  }
  Status recv(int, uint64_t, uint64_t, void*, size_t, transport::MemoryType, transport::Completion* c) override {
    c->posted = true;
    return Status::ok();
  }
  void cancel(transport::Completion* c) override { c->done = true; }

 private:
  const void* lo_;
  const void* hi_;
};

TEST(PipelinedExecutor, SendsEachPackedChunkBeforePackingTheNext) {
  // Chunks above PlanExecutor::kInlineBytes, so none rides with a header (from another buffer).
  const size_t words = 3127;
  algorithms::DenseOptions options;
  options.chunkBytes = 2048;
  static_assert(2048 > algorithms::PlanExecutor::kInlineBytes);
  auto plan = marsitRingPlan(0, 4, words, options, true);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  std::vector<uint64_t> bits(words), scratch((plan.value()->scratchBytes + 7) / 8);
  std::vector<std::string> log;
  RecordingTransport transport(&log, bits.data(), bits.data() + words);
  algorithms::RunBuffers buffers{bits.data(), bits.data(), scratch.data()};
  buffers.local = [&](const PlanOp& op) {
    log.push_back("pack " + std::to_string(reinterpret_cast<uintptr_t>(bits.data() + op.dst.offset / 8)));
    return Status::ok();
  };
  std::shared_ptr<const Plan> shared = plan.take();
  algorithms::PlanExecutor executor(shared, buffers, {0, 1, 0}, transport);
  size_t packs =
      std::count_if(shared->ops.begin(), shared->ops.end(), [](const PlanOp& op) { return op.kind == OpKind::kLocal; });
  // Rank 0 first sends block 3 (its left neighbour's), chunk by chunk.
  size_t firstBlockChunks = 0;
  for (const PlanOp& op : shared->ops)
    if (op.kind == OpKind::kSend && op.deps.size() == 1 && shared->ops[op.deps[0]].kind == OpKind::kLocal)
      ++firstBlockChunks;
  ASSERT_GT(firstBlockChunks, 2u);
  // Each call packs one chunk; the chunks of the first block go out as they are packed.
  EXPECT_TRUE(executor.start().code() == Code::kInProgress);
  // start() packs one chunk and sends it, then gives the transport a turn.
  ASSERT_EQ(log.size(), 2u);
  for (int k = 1; k < 1000 && log.size() < packs + firstBlockChunks; ++k) executor.progress().ignore();
  ASSERT_EQ(log.size(), packs + firstBlockChunks);
  for (size_t c = 0; c < firstBlockChunks; ++c) {
    ASSERT_EQ(log[2 * c].rfind("pack ", 0), 0u) << c;
    EXPECT_EQ(log[2 * c + 1], "send " + log[2 * c].substr(5)) << "chunk " << c << " not sent right after its pack";
  }
  executor.abort(Status(Code::kAborted, "test over"));
}

}  // namespace
}  // namespace tsr::marsit
