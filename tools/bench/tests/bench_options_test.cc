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
  auto o = parse({"-b", "1K", "-e", "4M", "-f", "4", "-n", "3", "-w", "1", "-d", "bf16", "-o", "max",
                  "-c", "0", "--collective", "reduce_scatter", "--json", "x.json", "-F", "csv"});
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
  auto coll = parse({"--collective", "alltoall"});
  ASSERT_FALSE(coll.isOk());
  EXPECT_NE(coll.status().message().find("alltoall"), std::string::npos);
}

TEST(BenchOptions, SweepIsGeometricAndWholeElements) {
  BenchOptions o;
  o.minBytes = 8;
  o.maxBytes = 1024;
  o.factor = 2;
  auto s = sweepSizes(o, 4);
  ASSERT_EQ(s.size(), 8u);
  EXPECT_EQ(s.front(), 8u);
  EXPECT_EQ(s.back(), 1024u);
  auto blocks = sweepSizes(o, 12);  // e.g. 3 ranks of f32 for reduce-scatter
  for (size_t b : blocks) EXPECT_EQ(b % 12, 0u);
}

TEST(BenchReport, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(busFactor(Collective::kAllreduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(busFactor(Collective::kAllgather, 4), 0.75);
  EXPECT_DOUBLE_EQ(busFactor(Collective::kReduceScatter, 5), 0.8);
  EXPECT_DOUBLE_EQ(busFactor(Collective::kBroadcast, 7), 1.0);
  BenchRow r;
  r.bytes = 1000000;
  r.timeUs = 1000;  // 1 GB/s
  EXPECT_NEAR(algbwGBs(r), 1.0, 1e-12);
  EXPECT_NEAR(busbwGBs(r, Collective::kAllreduce, 4), 1.5, 1e-12);
  EXPECT_NEAR(floorUs(r, Collective::kAllreduce, 4, 1.0), 1.5 * 8e6 / 1e9 * 1e6, 1e-6);
}

TEST(BenchReport, PeerFormatHasTheElevenColumnsSummarizeReads) {
  BenchOptions o;
  o.format = "peer";
  o.rateGbit = 1;
  BenchRow r;
  r.bytes = 4194304;
  r.count = 1048576;
  r.iters = 5;
  r.timeUs = 60000;
  r.minUs = 59000;
  r.maxUs = 61000;
  r.wrong = 0;
  std::istringstream in(formatRow(r, o, 4));
  std::vector<std::string> fields;
  for (std::string f; in >> f;) fields.push_back(f);
  ASSERT_EQ(fields.size(), 11u);
  EXPECT_EQ(fields[0], "4194304");
  EXPECT_EQ(fields[10], "OK");
  r.wrong = 3;
  EXPECT_NE(formatRow(r, o, 4).find("FAIL"), std::string::npos);
}

TEST(BenchReport, JsonLineHasTheRequiredFields) {
  BenchOptions o;
  BenchRow r;
  r.bytes = 64;
  r.count = 16;
  r.algo = "ring";
  r.error = "say \"no\"";
  std::string j = jsonLine(r, o, 3);
  for (const char* key : {"\"size\": 64", "\"count\": 16", "\"type\": \"f32\"", "\"redop\": \"sum\"",
                          "\"algo\": \"ring\"", "\"nranks\": 3", "\"time_us\"", "\"algbw\"", "\"busbw\"",
                          "\"wire_bytes\"", "\"wrong\"", "say \\\"no\\\""})
    EXPECT_NE(j.find(key), std::string::npos) << key << " in " << j;
}

}  // namespace
}  // namespace tsr::tools::bench
