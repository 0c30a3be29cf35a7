#include <gtest/gtest.h>

#include <sstream>

#include "tools/bench/bench_options.h"
#include "tools/bench/bench_report.h"

namespace tsr::tools::bench {
namespace {

Result<BenchOptions> parse(std::vector<const char*> args) {
  args.insert(args.begin(), "tsr-bench");
  return parseBenchOptions(static_cast<int>(args.size()), args.data());
}

TEST(BenchOptions, ParsesNcclTestsFlags) {
  auto o = parse({"-b",     "1K",     "-e",   "4M", "-f",  "4",  "-n", "3",    "-w",
                  "1",      "-d",     "bf16", "-o", "max", "-c", "0",  "--op", "reduce_scatter",
                  "--json", "x.json", "-F",   "csv"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o.value().minBytes, 1024u);
  EXPECT_EQ(o.value().maxBytes, 4u << 20);
  EXPECT_EQ(o.value().dtype, DataType::kBF16);
  EXPECT_EQ(o.value().op, ReduceOp::kMax);
  EXPECT_FALSE(o.value().check);
  EXPECT_EQ(o.value().collective, Collective::kReduceScatter);
  EXPECT_EQ(o.value().format, "csv");
}

TEST(BenchOptions, BadValuesAreNamed) {
  auto d = parse({"-d", "f8"});
  ASSERT_FALSE(d.isOk());
  EXPECT_NE(d.status().message().find("-d f8"), std::string::npos) << d.status().message();
  auto b = parse({"-b", "12Q"});
  ASSERT_FALSE(b.isOk());
  EXPECT_NE(b.status().message().find("12Q"), std::string::npos);
  auto order = parse({"-b", "4M", "-e", "1M"});
  ASSERT_FALSE(order.isOk());
  EXPECT_NE(order.status().message().find("smaller"), std::string::npos);
  auto coll = parse({"--op", "alltoall"});
  ASSERT_FALSE(coll.isOk());
  EXPECT_NE(coll.status().message().find("--op alltoall"), std::string::npos) << coll.status().message();
  // --op is the collective (nccl-tests' spelling): a reduction there is refused, naming it.
  auto redop = parse({"--op", "sum"});
  ASSERT_FALSE(redop.isOk());
  EXPECT_NE(redop.status().message().find("--op sum"), std::string::npos) << redop.status().message();
  auto badRedop = parse({"--redop", "xor"});
  ASSERT_FALSE(badRedop.isOk());
  EXPECT_NE(badRedop.status().message().find("-o xor"), std::string::npos) << badRedop.status().message();
}

// Sizes that are no number, infinite, past 1 TiB, or round to nothing: a named refusal or a
// finite sweep, never a hang or a crash; nccl-tests' lower-case suffixes are taken.
TEST(BenchOptions, SizesAreBoundedAndTheSweepEnds) {
  for (const char* bad : {"nan", "inf", "-1", "2T", "99999999999999999999", "1e30"}) {
    auto o = parse({"-b", "8", "-e", bad});
    ASSERT_FALSE(o.isOk()) << bad;
    EXPECT_NE(o.status().message().find(std::string("-e ") + bad), std::string::npos) << o.status().message();
  }
  auto lower = parse({"-b", "8k", "-e", "1m"});
  ASSERT_TRUE(lower.isOk()) << lower.status().toString();
  EXPECT_EQ(lower.value().minBytes, 8192u);
  EXPECT_EQ(lower.value().maxBytes, 1u << 20);
  // The sizes every tool reads alike (tools/common/byte_size.h): KiB.. x1024, KB.. x1000.
  auto iec = parse({"-b", "4KiB", "-e", "64MB"});
  ASSERT_TRUE(iec.isOk()) << iec.status().toString();
  EXPECT_EQ(iec.value().minBytes, 4096u);
  EXPECT_EQ(iec.value().maxBytes, 64000000u);
  for (const char* tiny : {"0", "1e-3"}) {
    auto o = parse({"-b", tiny, "-e", "64"});
    ASSERT_TRUE(o.isOk()) << tiny << ": " << o.status().toString();
    auto swept = sweepSizes(o.value(), 4);  // 0, then 1 byte (rounds up to one element), 8, 16, ...
    ASSERT_TRUE(swept.isOk()) << swept.status().toString();
    const std::vector<size_t>& sizes = swept.value();
    ASSERT_FALSE(sizes.empty());
    EXPECT_EQ(sizes.front(), 0u);
    EXPECT_EQ(sizes.back(), 64u);
    EXPECT_LE(sizes.size(), 8u);
  }
  EXPECT_FALSE(parse({"-f", "nan"}).isOk());
}

// A bound below 0 (or not a number) can never fail a run: refused, naming it.
TEST(BenchOptions, MinBusbwIsABandwidthOfAtLeastZero) {
  for (const char* bad : {"-1", "-0.5", "nan", "inf"}) {
    auto o = parse({"--min-busbw", bad});
    ASSERT_FALSE(o.isOk()) << bad;
    EXPECT_NE(o.status().message().find("--min-busbw "), std::string::npos) << o.status().message();
    EXPECT_NE(o.status().message().find("accepted values are a bandwidth >= 0 (GB/s)"), std::string::npos)
        << o.status().message();
  }
  EXPECT_NE(parse({"--min-busbw", "-1"}).status().message().find("--min-busbw -1:"), std::string::npos);
  for (const char* good : {"0", "2.5"}) {
    auto o = parse({"--min-busbw", good});
    ASSERT_TRUE(o.isOk()) << good << ": " << o.status().toString();
    EXPECT_DOUBLE_EQ(o.value().minBusbw, std::stod(good));
  }
}

TEST(BenchOptions, BitwiseReductionsTakeIntegers) {
  auto ok = parse({"-d", "i64", "-o", "bxor"});
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ(ok.value().op, ReduceOp::kBxor);
  auto floats = parse({"-o", "band"});
  ASSERT_FALSE(floats.isOk());
  EXPECT_NE(floats.status().message().find("-o band is bitwise: it takes -d i32 or i64, not -d f32"), std::string::npos)
      << floats.status().message();
}

// --op names the collective, --collective is its alias, -o / --redop the reduction.
TEST(BenchOptions, OpIsTheCollectiveAndRedopTheReduction) {
  auto o = parse({"--op", "allgather", "-o", "min"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o.value().collective, Collective::kAllgather);
  EXPECT_EQ(o.value().op, ReduceOp::kMin);
  auto alias = parse({"--collective", "broadcast", "--redop", "prod"});
  ASSERT_TRUE(alias.isOk()) << alias.status().toString();
  EXPECT_EQ(alias.value().collective, Collective::kBroadcast);
  EXPECT_EQ(alias.value().op, ReduceOp::kProd);
  auto last = parse({"--collective", "broadcast", "--op", "reduce_scatter"});  // one option: last wins
  ASSERT_TRUE(last.isOk()) << last.status().toString();
  EXPECT_EQ(last.value().collective, Collective::kReduceScatter);
  auto defaults = parse({});
  ASSERT_TRUE(defaults.isOk());
  EXPECT_EQ(defaults.value().collective, Collective::kAllreduce);
  EXPECT_EQ(defaults.value().op, ReduceOp::kSum);
}

TEST(BenchOptions, HelpListsTheOptionsAndEveryDenseAlgorithm) {
  auto h = parse({"--help"});
  ASSERT_FALSE(h.isOk());
  ASSERT_EQ(h.status().code(), Code::kNotSupported);
  const std::string& help = h.status().message();
  for (const char* want :
       {"--op", "--collective", "allreduce|allgather|reduce_scatter|broadcast", "-o,--redop", "sum|avg|min|max|prod",
        "--algo", "ring", "torus", "hier", "rabenseifner", "doubling", "bruck"})
    EXPECT_NE(help.find(want), std::string::npos) << "no " << want << " in\n" << help;
}

TEST(BenchOptions, LaterOptionsOverrideEarlierOnes) {
  // cluster.sh passes its defaults first; the caller's arguments come after them.
  auto o = parse({"-n", "5", "-w", "1", "-n", "2", "--algo", "ring", "--algo", "torus"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o.value().iters, 2);
  EXPECT_EQ(o.value().algo, "torus");
}

TEST(BenchOptions, MarsitTakesF32AllreduceOnly) {
  for (const char* algo : {"marsit", "marsit-torus"}) {
    auto ok = parse({"--algo", algo, "-o", "avg"});
    ASSERT_TRUE(ok.isOk()) << ok.status().toString();
    EXPECT_TRUE(isMarsit(ok.value()));
  }
  EXPECT_FALSE(isMarsit(parse({"--algo", "ring"}).value()));
  // An unknown name is refused here, with every accepted value (dense and compressed).
  auto bad = parse({"--algo", "rign"});
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("--algo rign: accepted values are auto|ring|torus"), std::string::npos)
      << bad.status().toString();
  EXPECT_NE(bad.status().message().find("|marsit|"), std::string::npos) << bad.status().toString();
  EXPECT_NE(bad.status().message().find("topk-2level-fp16"), std::string::npos);
  struct Case {
    std::vector<const char*> args;
    std::string named;
  };
  for (const Case& c :
       {Case{{"--algo", "marsit", "-d", "f64"}, "--algo marsit: -d f64"},
        Case{{"--algo", "marsit", "-d", "bf16"}, "--algo marsit: -d bf16"},
        Case{{"--algo", "marsit", "--op", "allgather"}, "--algo marsit: --op allgather"},
        Case{{"--collective", "broadcast", "--algo", "marsit-torus"}, "--algo marsit-torus: --op broadcast"},
        Case{{"--algo", "marsit", "-o", "prod"}, "--algo marsit: -o prod"}}) {
    auto o = parse(c.args);
    ASSERT_FALSE(o.isOk()) << c.named;
    EXPECT_NE(o.status().message().find(c.named), std::string::npos) << o.status().message();
  }
}

// The tensor algorithms leave their own reduction unless -o names the other: the row's redop
// is what ran (it said sum for Marsit's average).
TEST(BenchOptions, TensorAlgorithmsReduceAsTheirRowsSay) {
  struct Case {
    std::vector<const char*> args;
    ReduceOp op;
  };
  for (const Case& c :
       {Case{{"--algo", "marsit"}, ReduceOp::kAvg}, Case{{"--algo", "topk"}, ReduceOp::kAvg},
        Case{{"--algo", "onebit"}, ReduceOp::kAvg}, Case{{"--algo", "spardl"}, ReduceOp::kSum},
        Case{{"--algo", "marsit", "-o", "sum"}, ReduceOp::kSum},
        Case{{"--algo", "spardl", "--redop", "avg"}, ReduceOp::kAvg}, Case{{"--algo", "ring"}, ReduceOp::kSum}}) {
    auto o = parse(c.args);
    ASSERT_TRUE(o.isOk()) << c.args[1] << ": " << o.status().toString();
    EXPECT_EQ(o.value().op, c.op) << c.args[1] << " " << c.args.size();
  }
  auto refused = parse({"--algo", "topk", "-o", "max"});
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("--algo topk: -o max is not accepted (sum|avg;"), std::string::npos)
      << refused.status().message();
}

TEST(BenchOptions, SparseTakesF32AllreduceAndItsOwnOptions) {
  auto o = parse({"--algo", "spardl", "--density", "0.001", "--teams", "3", "--sag", "b", "-o", "avg"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_TRUE(isCompressed(o.value()));
  EXPECT_DOUBLE_EQ(o.value().density, 0.001);
  EXPECT_EQ(o.value().teams, 3);
  EXPECT_EQ(o.value().sag, "b");
  EXPECT_TRUE(isCompressed(parse({"--algo", "topk", "--teams", "2"}).value()));  // ignored there
  auto dense = parse({"--algo", "ring", "--density", "0.5", "--teams", "2"});    // cluster.sh passes them to all
  ASSERT_TRUE(dense.isOk()) << dense.status().toString();
  EXPECT_FALSE(isCompressed(dense.value()));
  EXPECT_EQ(densityText(0.01), "0.01");
  EXPECT_EQ(densityText(1), "1");
  struct Case {
    std::vector<const char*> args;
    std::string named;
  };
  for (const Case& c : {Case{{"--algo", "spardl", "-d", "f16"}, "--algo spardl: -d f16"},
                        Case{{"--algo", "topk", "--collective", "reduce_scatter"}, "--algo topk: --op reduce_scatter"},
                        Case{{"--algo", "spardl", "-o", "min"}, "--algo spardl: -o min"},
                        Case{{"--algo", "spardl", "--teams", "6", "--sag", "r"}, "--teams 6"},
                        Case{{"--density", "1.5"}, "--density 1.5"}, Case{{"--teams", "0"}, "--teams 0"},
                        Case{{"--sag", "q"}, "--sag"}}) {
    auto p = parse(c.args);
    ASSERT_FALSE(p.isOk()) << c.named;
    EXPECT_NE(p.status().message().find(c.named), std::string::npos) << p.status().message();
  }
}

TEST(BenchOptions, SweepIsGeometricAndWholeElements) {
  BenchOptions o;
  o.minBytes = 8;
  o.maxBytes = 1024;
  o.factor = 2;
  auto s = sweepSizes(o, 4).value();
  ASSERT_EQ(s.size(), 8u);
  EXPECT_EQ(s.front(), 8u);
  EXPECT_EQ(s.back(), 1024u);
  auto blocks = sweepSizes(o, 12).value();  // e.g. 3 ranks of f32 for reduce-scatter
  for (size_t b : blocks) EXPECT_EQ(b % 12, 0u);
  // Under one element is one element (it was a 0-byte row); 0 asked for stays 0.
  o.minBytes = o.maxBytes = 3;
  EXPECT_EQ(sweepSizes(o, 4).value(), std::vector<size_t>{4});
  o.minBytes = 0;
  o.maxBytes = 8;
  EXPECT_EQ(sweepSizes(o, 4).value(), (std::vector<size_t>{0, 4, 8}));
}

// A factor just above 1: one row per distinct size, at most 200 of them; a longer sweep is
// refused, naming -f, -b and -e (it was cut at 201 rows, or spun through the steps that round
// to one size); -f 1 never repeats a size.
TEST(BenchOptions, SweepHasDistinctSizesAndAtMost200Rows) {
  BenchOptions o;
  o.minBytes = 4;
  o.maxBytes = 803;
  o.factor = 1.000001;  // every element a row: 4, 8, ..., 800
  auto exact = sweepSizes(o, 4);
  ASSERT_TRUE(exact.isOk()) << exact.status().toString();
  ASSERT_EQ(exact.value().size(), 200u);
  for (size_t i = 0; i < 200; ++i) EXPECT_EQ(exact.value()[i], 4 * (i + 1));
  o.maxBytes = 807;  // 201 rows
  auto over = sweepSizes(o, 4);
  ASSERT_FALSE(over.isOk());
  EXPECT_EQ(over.status().message(),
            "-f 1.000001 from -b 4 to -e 807 makes more than 200 rows of 4-byte elements (the most a sweep takes): "
            "raise -f or narrow -b..-e");
  for (double factor : {1.0001, 1.0000000001}) {  // the default -b 8 -e 64M
    BenchOptions wide;
    wide.factor = factor;
    auto refused = sweepSizes(wide, 4);
    ASSERT_FALSE(refused.isOk()) << factor;
    EXPECT_NE(refused.status().message().find("-b 8 to -e 67108864 makes more than 200 rows"), std::string::npos)
        << refused.status().message();
  }
  // Near 1 but within the cap: distinct, increasing, whole elements, from -b up to -e.
  o.minBytes = 1000;
  o.maxBytes = 1100;
  o.factor = 1.001;
  auto near = sweepSizes(o, 4).value();
  ASSERT_FALSE(near.empty());
  EXPECT_EQ(near.front(), 1000u);
  EXPECT_GE(near.back(), 1096u);
  EXPECT_LE(near.back(), 1100u);
  for (size_t i = 1; i < near.size(); ++i) EXPECT_GT(near[i], near[i - 1]) << i;
  for (size_t s : near) EXPECT_EQ(s % 4, 0u);
  // -f 1 (or below): -b and -e, once each; sizes that round alike are one row.
  o.factor = 1;
  EXPECT_EQ(sweepSizes(o, 4).value(), (std::vector<size_t>{1000, 1100}));
  o.minBytes = 5;
  o.maxBytes = 7;
  EXPECT_EQ(sweepSizes(o, 4).value(), std::vector<size_t>{4});
  o.factor = 2;
  EXPECT_EQ(sweepSizes(o, 4).value(), std::vector<size_t>{4});
}

}  // namespace
}  // namespace tsr::tools::bench
