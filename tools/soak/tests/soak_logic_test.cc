// tsr-soak's pure logic: the sequence is the same for a seed (and differs for another), every
// operation is valid for the setup it is drawn on and fits --max-bytes, and the expected values
// are those a reduction written out by hand gives, for every collective.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "base/reference_values.h"
#include "tools/soak/soak_options.h"
#include "tools/soak/soak_plan.h"
#include "tools/soak/soak_resources.h"
#include "tools/soak/soak_values.h"

namespace tsr::tools::soak {
namespace {

bool sameOp(const Op& a, const Op& b) {
  return a.index == b.index && a.collective == b.collective && a.dtype == b.dtype && a.op == b.op &&
         a.count == b.count && a.root == b.root && a.inPlace == b.inPlace && a.setup == b.setup && a.salt == b.salt;
}

std::vector<Op> draw(uint64_t seed, int size, size_t maxBytes, uint64_t ops, std::vector<size_t>* bursts = nullptr) {
  OpGenerator g(seed, size, maxBytes, 8, defaultSetups(size));
  std::vector<Op> out;
  while (out.size() < ops) {
    auto burst = g.nextBurst(ops - out.size());
    if (bursts) bursts->push_back(burst.size());
    out.insert(out.end(), burst.begin(), burst.end());
  }
  return out;
}

TEST(SoakPlan, SameSeedSameSequenceOtherSeedAnother) {
  std::vector<size_t> burstsA, burstsB;
  auto a = draw(7, 4, 1 << 20, 3000, &burstsA);
  auto b = draw(7, 4, 1 << 20, 3000, &burstsB);
  auto c = draw(8, 4, 1 << 20, 3000);
  ASSERT_EQ(a.size(), 3000u);
  EXPECT_EQ(burstsA, burstsB);
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(sameOp(a[i], b[i])) << "op " << i;
    EXPECT_EQ(a[i].index, i);
    differ += !sameOp(a[i], c[i]);
  }
  EXPECT_GT(differ, 2900u);
}

TEST(SoakPlan, OpsAreValidForTheirSetupAndFitMaxBytes) {
  const int n = 4;
  const size_t maxBytes = size_t{16} << 20;
  auto setups = defaultSetups(n);
  std::vector<size_t> bursts;
  auto ops = draw(1, n, maxBytes, 20000, &bursts);
  std::set<Collective> collectives;
  std::set<int> setupsUsed;
  std::set<DataType> dtypes;
  std::set<ReduceOp> reductions;
  size_t empty = 0, large = 0, small = 0, inPlace = 0;
  for (const Op& op : ops) {
    ASSERT_GE(op.setup, 0);
    ASSERT_LT(op.setup, static_cast<int>(setups.size()));
    EXPECT_TRUE(setups[op.setup].servesCollective(op.collective)) << describeOp(op) << " on " << setups[op.setup].name;
    EXPECT_LE(largestBufferBytes(op, n), maxBytes) << describeOp(op);
    EXPECT_GE(op.root, 0);
    EXPECT_LT(op.root, n);
    EXPECT_FALSE(isBitwiseOp(op.op) && isFloatType(op.dtype)) << describeOp(op);  // integers only
    collectives.insert(op.collective);
    setupsUsed.insert(op.setup);
    dtypes.insert(op.dtype);
    reductions.insert(op.op);
    inPlace += op.inPlace;
    if (op.collective == Collective::kBarrier) continue;
    empty += op.count == 0;
    large += largestBufferBytes(op, n) > maxBytes / 2;
    small += largestBufferBytes(op, n) <= 4096;
  }
  EXPECT_EQ(collectives.size(), 5u);
  EXPECT_EQ(setupsUsed.size(), setups.size());
  EXPECT_EQ(dtypes.size(), 6u);
  EXPECT_EQ(reductions.size(), static_cast<size_t>(kNumReduceOps));
  // Log-uniform sizes: many small ones, some near the top, a few empty.
  EXPECT_GT(empty, 200u);
  EXPECT_GT(large, 200u);
  EXPECT_GT(small, 5000u);
  EXPECT_GT(inPlace, 3000u);
  EXPECT_EQ(*std::max_element(bursts.begin(), bursts.end()), 8u);
  EXPECT_EQ(*std::min_element(bursts.begin(), bursts.end()), 1u);
}

TEST(SoakPlan, SetupsFitTheJob) {
  auto names = [](int n) {
    std::vector<std::string> s;
    for (const soak::Setup& setup : defaultSetups(n)) s.push_back(setup.name);
    return s;
  };
  EXPECT_EQ(names(4), (std::vector<std::string>{"shm", "ring", "rabenseifner", "doubling", "bruck", "torus", "hier",
                                                "ring-hosts"}));
  EXPECT_EQ(names(3), (std::vector<std::string>{"shm", "ring", "rabenseifner", "doubling", "bruck", "ring-hosts"}));
  EXPECT_EQ(defaultSetups(6)[5].ranksPerHost, 2);
  auto chosen = selectSetups(4, "ring,torus");
  ASSERT_TRUE(chosen.isOk());
  EXPECT_EQ(chosen.value().size(), 2u);
  auto bad = selectSetups(3, "torus");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("'torus'"), std::string::npos);
  // Only all-gathers when only bruck is chosen: the generator draws what some setup serves.
  OpGenerator g(3, 4, 4096, 4, selectSetups(4, "bruck").value());
  for (int i = 0; i < 200; ++i) EXPECT_EQ(g.next().collective, Collective::kAllgather);
}

// The reductions of the inputs, written out by hand.
double handReduce(const Op& op, int n, size_t j) {
  std::vector<double> v;
  for (int r = 0; r < n; ++r) v.push_back(inputValue(op, n, r, j));
  double sum = 0, prod = 1;
  for (double x : v) sum += x, prod *= x;
  switch (op.op) {
    case ReduceOp::kSum:
      return sum;
    case ReduceOp::kProd:
      return prod;
    case ReduceOp::kMin:
      return *std::min_element(v.begin(), v.end());
    case ReduceOp::kMax:
      return *std::max_element(v.begin(), v.end());
    case ReduceOp::kAvg:
      if (!isFloatType(op.dtype)) return std::trunc(sum / n);
      return sum / n;  // exact for n = 4: a small integer over 4
    case ReduceOp::kBand:
    case ReduceOp::kBor:
    case ReduceOp::kBxor: {
      int64_t acc = static_cast<int64_t>(v[0]);
      for (size_t r = 1; r < v.size(); ++r) {
        const auto x = static_cast<int64_t>(v[r]);
        acc = op.op == ReduceOp::kBand ? acc & x : op.op == ReduceOp::kBor ? acc | x : acc ^ x;
      }
      return static_cast<double>(acc);
    }
  }
  return 0;
}

TEST(SoakValues, ExpectedValuesForEveryCollective) {
  const int n = 4;
  for (DataType t : reference::kAllTypes)
    for (ReduceOp r : reference::opsFor(t)) {
      Op op;
      op.dtype = t;
      op.op = r;
      op.count = 97;
      op.salt = 12345u + static_cast<uint32_t>(t) * 7 + static_cast<uint32_t>(r);
      op.collective = Collective::kAllreduce;
      for (size_t j = 0; j < op.count; ++j) {
        double want = handReduce(op, n, j);
        ASSERT_EQ(expectedValue(op, n, 2, j), want) << dataTypeName(t) << " " << reduceOpName(r) << " element " << j;
        if (r == ReduceOp::kProd) {
          EXPECT_EQ(std::fabs(want), 2.0);
        } else {
          EXPECT_LE(std::fabs(inputValue(op, n, 1, j)), 8.0);
        }
      }
      op.collective = Collective::kReduceScatter;
      for (int rank = 0; rank < n; ++rank) {
        for (size_t j = 0; j < op.count; ++j) {
          ASSERT_EQ(expectedValue(op, n, rank, j), handReduce(op, n, rank * op.count + j));
        }
      }
    }
  Op gather;
  gather.collective = Collective::kAllgather;
  gather.dtype = DataType::kBF16;
  gather.count = 33;
  gather.salt = 99;
  for (int rank = 0; rank < n; ++rank) {
    for (size_t j = 0; j < outputCount(gather, n); ++j) {
      ASSERT_EQ(expectedValue(gather, n, rank, j), inputValue(gather, n, static_cast<int>(j / 33), j % 33));
    }
  }
  Op bcast;
  bcast.collective = Collective::kBroadcast;
  bcast.dtype = DataType::kI64;
  bcast.count = 50;
  bcast.root = 3;
  bcast.salt = 5;
  size_t differs = 0;
  for (size_t j = 0; j < 50; ++j) {
    EXPECT_EQ(expectedValue(bcast, n, 0, j), inputValue(bcast, n, 3, j));
    differs += inputValue(bcast, n, 0, j) != inputValue(bcast, n, 3, j);
  }
  EXPECT_GT(differs, 30u);  // a rank that kept its own input would be caught
}

TEST(SoakValues, AverageDividesAsTheLibraryDoes) {
  // 3 ranks: a sum over 3 is rounded in the dtype's own arithmetic.
  Op op;
  op.collective = Collective::kAllreduce;
  op.op = ReduceOp::kAvg;
  op.count = 200;
  for (DataType t : reference::kAllTypes) {
    op.dtype = t;
    for (size_t j = 0; j < op.count; ++j) {
      double sum = 0;
      for (int r = 0; r < 3; ++r) sum += inputValue(op, 3, r, j);
      double want = t == DataType::kF64 ? sum / 3
                    : isFloatType(t)    ? static_cast<double>(static_cast<float>(sum) / 3.0f)
                                        : static_cast<double>(static_cast<int64_t>(sum) / 3);
      if (t == DataType::kF16 || t == DataType::kBF16) {
        unsigned char b[2];
        reference::storeValue(b, 0, t, want);
        want = reference::loadValue(b, 0, t);
      }
      ASSERT_EQ(expectedValue(op, 3, 0, j), want) << dataTypeName(t) << " element " << j;
    }
  }
}

TEST(SoakValues, FilledInputReadsBackAndMismatchesAreFound) {
  const int n = 4;
  for (DataType t : reference::kAllTypes) {
    Op op;
    op.collective = Collective::kAllreduce;
    op.dtype = t;
    op.op = ReduceOp::kMax;
    op.count = 1000;
    op.salt = 77;
    std::vector<char> buf(op.count * dataTypeSize(t));
    fillInput(op, n, 1, buf.data());
    for (size_t j = 0; j < op.count; ++j) ASSERT_EQ(reference::loadValue(buf.data(), j, t), inputValue(op, n, 1, j));
    std::vector<char> out(buf.size());
    for (size_t j = 0; j < op.count; ++j) reference::storeValue(out.data(), j, t, expectedValue(op, n, 1, j));
    EXPECT_FALSE(findMismatch(op, n, 1, out.data()).has_value());
    reference::storeValue(out.data(), 417, t, expectedValue(op, n, 1, 417) + 1);
    auto bad = findMismatch(op, n, 1, out.data());
    ASSERT_TRUE(bad.has_value());
    EXPECT_EQ(bad->element, 417u);
    std::fill(out.begin(), out.end(), static_cast<char>(kPoisonByte));  // never written
    bad = findMismatch(op, n, 1, out.data());
    ASSERT_TRUE(bad.has_value()) << dataTypeName(t);
    EXPECT_EQ(bad->element, 0u);
  }
}

TEST(SoakResources, FlatAfterWarmupPassesGrowthIsNamed) {
  auto at = [](uint64_t when, int64_t rss, int64_t fds, int64_t shm, int64_t maps) {
    Figures f;
    f.rssKiB = rss;
    f.fds = fds;
    f.shmEntries = shm;
    f.shmMaps = maps;
    return Sample{when, f};
  };
  // Growth during warm-up (before op 100) does not count.
  std::vector<Sample> flat = {at(0, 1000, 10, 2, 3), at(50, 90000, 40, 2, 9), at(100, 100000, 50, 2, 9),
                              at(200, 110000, 50, 2, 9), at(300, 100500, 50, 2, 9)};
  PhaseVerdict v = judgePhase("mixed", 3, flat, 100, 16 * 1024, true);
  EXPECT_TRUE(v.failures.empty());
  EXPECT_EQ(v.start.at, 100u);
  EXPECT_EQ(v.end.at, 300u);
  EXPECT_EQ(v.peak.rssKiB, 110000);
  std::vector<Sample> leaky = {at(0, 1000, 10, 2, 3), at(100, 100000, 50, 2, 9), at(300, 140000, 51, 3, 10)};
  v = judgePhase("cycles", 3, leaky, 100, 16 * 1024, true);
  ASSERT_EQ(v.failures.size(), 4u);
  EXPECT_NE(v.failures[0].find("rank 3, cycles: open file descriptors grew from 50 to 51"), std::string::npos);
  EXPECT_NE(v.failures[1].find("/dev/shm entries grew from 2 to 3"), std::string::npos);
  EXPECT_NE(v.failures[2].find("shared-memory mappings grew from 9 to 10"), std::string::npos);
  EXPECT_NE(v.failures[3].find("RSS less the scratch pools' idle memory grew from 97.7 MiB to 136.7 MiB (+39.1 MiB"),
            std::string::npos);
  EXPECT_NE(v.failures[3].find("bound: +16.0 MiB"), std::string::npos);
  // What the scratch pools hold (idle memory, blocks mapped) is reported, not judged.
  auto pooled = [&](uint64_t when, int64_t rss, int64_t maps, int64_t idle, int64_t blocks) {
    Sample s = at(when, rss, 50, 2, maps);
    s.figures.poolIdleKiB = idle;
    s.figures.poolBlocks = blocks;
    return s;
  };
  v = judgePhase("mixed", 1, {pooled(100, 100000, 40, 20000, 10), pooled(300, 150000, 60, 65000, 30)}, 100, 16 * 1024,
                 true);
  EXPECT_TRUE(v.failures.empty()) << v.failures.front();
  v = judgePhase("mixed", 1, {pooled(100, 100000, 40, 20000, 10), pooled(300, 150000, 61, 25000, 30)}, 100, 16 * 1024,
                 true);
  ASSERT_EQ(v.failures.size(), 2u);
  EXPECT_NE(v.failures[0].find("mappings grew from 40 to 61 while the scratch pools obtained 20 blocks"),
            std::string::npos);
  EXPECT_NE(v.failures[1].find("(+43.9 MiB; RSS 97.7 -> 146.5 MiB, pools 19.5 -> 24.4 MiB)"), std::string::npos);
  // RSS reported but not judged (sanitizer builds).
  v = judgePhase("cycles", 3, {at(0, 1, 1, 1, 1), at(1, 99999, 1, 1, 1)}, 0, 16, false);
  EXPECT_TRUE(v.failures.empty());
}

TEST(SoakOptions, DefaultsSizesAndErrors) {
  const char* none[] = {"tsr-soak"};
  auto d = parseSoakOptions(1, none);
  ASSERT_TRUE(d.isOk());
  EXPECT_EQ(d.value().ops, 20000u);
  EXPECT_EQ(d.value().maxBytes, size_t{16} << 20);
  EXPECT_EQ(d.value().inflight, 8);
  EXPECT_EQ(d.value().cycles, 500u);
  EXPECT_EQ(d.value().warmupPct, 50);
  EXPECT_EQ(d.value().cycleWarmupPct, 10);
  EXPECT_EQ(d.value().rssBoundMiB, 32);
  EXPECT_EQ(d.value().cycleRssBoundKiB, 1024);
  const char* some[] = {"tsr-soak", "--ops", "300", "--max-bytes", "1M", "--cycles", "30", "--algos", "ring,shm"};
  auto s = parseSoakOptions(9, some);
  ASSERT_TRUE(s.isOk()) << s.status().message();
  EXPECT_EQ(s.value().maxBytes, size_t{1} << 20);
  EXPECT_EQ(s.value().algos, "ring,shm");
  const char* bad[] = {"tsr-soak", "--inflight", "0"};
  auto b = parseSoakOptions(3, bad);
  ASSERT_FALSE(b.isOk());
  EXPECT_NE(b.status().message().find("--inflight"), std::string::npos);
  const char* iec[] = {"tsr-soak", "--max-bytes", "64KiB"};  // sizes as every tool reads them
  EXPECT_EQ(parseSoakOptions(3, iec).value().maxBytes, size_t{64} << 10);
  const char* badSize[] = {"tsr-soak", "--max-bytes", "lots"};
  EXPECT_NE(parseSoakOptions(3, badSize).status().message().find("--max-bytes lots: not a size"), std::string::npos);
}

// A negative count or seed wrapped to 2^64 - N (a run of 18446744073709551611 operations), and a
// number past 2^64 became the largest: both refused, naming the option and the value.
TEST(SoakOptions, CountsAndSeedAreWholeNumbersWithin64Bits) {
  for (const char* option : {"--ops", "--cycles", "--seed"}) {
    for (const char* bad : {"-5", "-1", "18446744073709551616", "1e3", "12x", "+5", ""}) {
      const char* args[] = {"tsr-soak", option, bad};
      auto o = parseSoakOptions(3, args);
      ASSERT_FALSE(o.isOk()) << option << " " << bad;
      EXPECT_NE(o.status().message().find(std::string(option) + " " + bad), std::string::npos) << o.status().message();
    }
    const std::string eqArg = std::string(option) + "=-2";
    const char* eq[] = {"tsr-soak", eqArg.c_str()};
    auto o = parseSoakOptions(2, eq);
    ASSERT_FALSE(o.isOk()) << eqArg;
    EXPECT_EQ(o.status().message(), "tsr-soak: " + std::string(option) +
                                        " -2: accepted values are whole numbers from 0 to 18446744073709551615");
  }
  const char* edges[] = {"tsr-soak", "--ops", "0", "--cycles", "18446744073709551615", "--seed", "7"};
  auto o = parseSoakOptions(7, edges);
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o.value().ops, 0u);
  EXPECT_EQ(o.value().cycles, 18446744073709551615u);
  EXPECT_EQ(o.value().seed, 7u);
}

}  // namespace
}  // namespace tsr::tools::soak
