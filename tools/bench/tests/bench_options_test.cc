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
  for (const char* tiny : {"0", "1e-3"}) {
    auto o = parse({"-b", tiny, "-e", "64"});
    ASSERT_TRUE(o.isOk()) << tiny << ": " << o.status().toString();
    auto sizes = sweepSizes(o.value(), 4);  // 0, then 1 byte (rounds to 0 elements), 2, 4, ...
    ASSERT_FALSE(sizes.empty());
    EXPECT_EQ(sizes.front(), 0u);
    EXPECT_EQ(sizes.back(), 64u);
    EXPECT_LE(sizes.size(), 8u);
  }
  EXPECT_FALSE(parse({"-f", "nan"}).isOk());
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
  r.wrong = -1;  // -c 0: not checked, which is not a failure
  EXPECT_EQ(formatRow(r, o, 4).substr(formatRow(r, o, 4).size() - 3), " -\n");
  r.error = "rank 2: timed out";
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
  for (const char* key :
       {"\"size\": 64", "\"count\": 16", "\"type\": \"f32\"", "\"redop\": \"sum\"", "\"algo\": \"ring\"",
        "\"nranks\": 3", "\"time_us\"", "\"algbw\"", "\"busbw\"", "\"wire_bytes\"", "\"wrong\"", "say \\\"no\\\""})
    EXPECT_NE(j.find(key), std::string::npos) << key << " in " << j;
}

// Every timed iteration, in the order run, so a bimodal run can be seen; none, no field.
TEST(BenchReport, JsonLineListsEachIterationInOrder) {
  BenchOptions o;
  BenchRow r;
  r.itersUs = {3.5, 1.25, 2.0};
  EXPECT_NE(jsonLine(r, o, 2).find(", \"iter_us\": [3.500, 1.250, 2.000]"), std::string::npos) << jsonLine(r, o, 2);
  r.itersUs.clear();
  EXPECT_EQ(jsonLine(r, o, 2).find("iter_us"), std::string::npos) << jsonLine(r, o, 2);
}

// A size that failed has no figures in the table: dashes and FAIL where zeros would read as a
// measurement with no wrong values, then the error.
TEST(BenchReport, FailedSizeShowsNoFiguresInTheTable) {
  BenchOptions o;
  BenchRow r;
  r.bytes = 16777216;
  r.count = 4194304;
  r.algo = "ring";
  r.wrong = 0;
  r.error = "TSR_ERR_TIMEOUT: rank 2 (tsr1) stopped responding";
  std::string text = formatRow(r, o, 4);
  std::istringstream in(text.substr(0, text.find('\n')));
  std::vector<std::string> fields;
  for (std::string f; in >> f;) fields.push_back(f);
  ASSERT_EQ(fields.size(), 10u) << text;
  EXPECT_EQ(fields[0], "16777216");
  for (size_t i = 5; i < 9; ++i) EXPECT_EQ(fields[i], "-") << text;
  EXPECT_EQ(fields[9], "FAIL") << text;
  EXPECT_NE(text.find("\n#   error: TSR_ERR_TIMEOUT: rank 2 (tsr1) stopped responding\n"), std::string::npos) << text;
  r.error.clear();
  EXPECT_EQ(formatRow(r, o, 4).find("FAIL"), std::string::npos);
}

// Broadcast and all-gather reduce nothing: every format says "none", not the -o default.
TEST(BenchReport, CollectivesWithoutAReductionSayNoneInEveryFormat) {
  BenchRow r;
  r.bytes = 64;
  r.count = 16;
  r.algo = "binomial";
  for (Collective c : {Collective::kBroadcast, Collective::kAllgather}) {
    BenchOptions o;
    o.collective = c;
    EXPECT_NE(jsonLine(r, o, 3).find("\"redop\": \"none\""), std::string::npos) << jsonLine(r, o, 3);
    o.format = "csv";
    EXPECT_NE(formatRow(r, o, 3).find(",none,"), std::string::npos) << formatRow(r, o, 3);
    o.format = "table";
    EXPECT_NE(formatRow(r, o, 3).find(" none "), std::string::npos) << formatRow(r, o, 3);
  }
  BenchOptions reduceScatter;
  reduceScatter.collective = Collective::kReduceScatter;
  reduceScatter.op = ReduceOp::kMax;
  EXPECT_NE(jsonLine(r, reduceScatter, 3).find("\"redop\": \"max\""), std::string::npos);
}

TEST(BenchReport, CompressedFloorIsOneBitPerElementInWholeWords) {
  // N=4, 16 MiB f32 at 100 Mbit/s: 1.5 * 4 Mi/64 words * 8 B * 8 / 1e8 s = 62914.56 us.
  EXPECT_NEAR(compressedFloorUs(size_t{4} << 20, 4, 0.1), 62914.56, 1e-6);
  EXPECT_NEAR(compressedFloorUs(65, 2, 1.0), 1.0 * 16 * 8 / 1e9 * 1e6, 1e-9);  // 65 elements: 2 words
  EXPECT_EQ(compressedFloorUs(1000, 1, 1.0), 0.0);
  EXPECT_EQ(compressedFloorUs(1000, 4, 0.0), 0.0);
}

BenchRow marsitRow() {
  BenchRow r;
  r.bytes = size_t{16} << 20;
  r.count = size_t{4} << 20;
  r.iters = 3;
  r.timeUs = 125829.12;  // twice the floor at 100 Mbit/s, N=4
  r.wrong = 0;
  r.algo = "marsit-ring";
  r.wireBytes = 196704;
  r.hasSplit = true;
  r.split = {1, 2, 3, 4, 5, 6, 21};
  return r;
}

TEST(BenchReport, SplitLineIsACommentWithTheFloorRatio) {
  BenchOptions o;
  o.algo = "marsit";
  o.rateGbit = 0.1;
  std::string line = splitLine(marsitRow(), o, 4);
  EXPECT_EQ(line.rfind("#   split(us) prepare 1.0 pack 2.0 wire 3.0 merge 4.0 decompress 5.0 compensate 6.0 "
                       "total 21.0 sent(B) 196704 floor(us) 62914.6 x_floor 2.00\n",
                       0),
            0u)
      << line;
  o.rateGbit = 0;
  EXPECT_NE(splitLine(marsitRow(), o, 4).find("floor(us) 0.0 x_floor -"), std::string::npos);
  BenchRow dense = marsitRow();
  dense.hasSplit = false;
  EXPECT_EQ(splitLine(dense, o, 4), "");
  // The peer format's 11 columns keep the dense floor of the logical size.
  o.format = "peer";
  o.rateGbit = 0.1;
  std::istringstream in(formatRow(marsitRow(), o, 4));
  std::vector<std::string> fields;
  for (std::string f; in >> f;) fields.push_back(f);
  ASSERT_EQ(fields.size(), 11u);
  EXPECT_EQ(fields[0], std::to_string(size_t{16} << 20));
}

TEST(BenchReport, JsonLineOfAMarsitRowHasTheSplit) {
  BenchOptions o;
  o.algo = "marsit";
  o.rateGbit = 0.1;
  std::string j = jsonLine(marsitRow(), o, 4);
  for (const char* key : {"\"split\": {\"prepare\": 1.000, \"pack\": 2.000, \"wire\": 3.000, \"merge\": 4.000, "
                          "\"decompress\": 5.000, \"compensate\": 6.000, \"total\": 21.000}",
                          "\"floor_us\": 62914.560", "\"x_floor\": 2.00", "\"algo\": \"marsit-ring\""})
    EXPECT_NE(j.find(key), std::string::npos) << key << " in " << j;
  o.rateGbit = 0;
  EXPECT_NE(jsonLine(marsitRow(), o, 4).find("\"x_floor\": null"), std::string::npos);
  EXPECT_EQ(jsonLine(BenchRow{}, o, 4).find("split"), std::string::npos);
}

TEST(BenchReport, SparseFloorIsSparDLsSrsPlusBruck) {
  // N=6, 16 MiB f32: block ceil(4 Mi / 6) = 699051, k_b = ceil(6990.51) = 6991,
  // 2 * 5 * 6991 * 8 B = 559280 B; at 100 Mbit/s 44742.4 us.
  EXPECT_DOUBLE_EQ(sparseFloorBytes(size_t{4} << 20, 6, 0.01), 559280.0);
  EXPECT_NEAR(sparseFloorUs(size_t{4} << 20, 6, 0.01, 0.1), 44742.4, 1e-6);
  EXPECT_DOUBLE_EQ(sparseFloorBytes(10, 2, 1.0), 2.0 * 1 * 5 * 8);  // density 1: whole blocks
  EXPECT_EQ(sparseFloorUs(1000, 1, 0.01, 1.0), 0.0);
  EXPECT_EQ(sparseFloorUs(1000, 4, 0.01, 0.0), 0.0);
}

TEST(BenchReport, SparseRowsHaveTheirSplitLineAndJson) {
  BenchOptions o;
  o.algo = "spardl";
  o.rateGbit = 0.1;
  BenchRow r = marsitRow();
  r.hasSplit = false;
  r.hasSparse = true;
  r.algo = "spardl";
  r.timeUs = 89484.8;  // twice the N=6 floor
  r.wireBytes = 560000;
  r.sparse = {true, 1, 2, 0.5, 3, 6.5, 41946};
  std::string line = splitLine(r, o, 6);
  EXPECT_EQ(
      line,
      "#   split(us) select 1.0 merge 2.0 local 0.5 wire 3.0 total 6.5 nnz 41946 sent(B) 560000 floor(us) 44742.4 "
      "x_floor 2.00\n")
      << line;
  std::string j = jsonLine(r, o, 6);
  for (const char* key :
       {"\"sparse\": {\"select\": 1.000, \"merge\": 2.000, \"local\": 0.500, \"wire\": 3.000, \"total\": 6.500, "
        "\"nnz\": 41946}",
        "\"density\": 0.01", "\"floor_us\": 44742.400", "\"x_floor\": 2.00"})
    EXPECT_NE(j.find(key), std::string::npos) << key << " in " << j;
  r.sparse.timed = false;  // topk: no split, the same floor
  EXPECT_EQ(splitLine(r, o, 6).rfind("#   sparse nnz 41946 sent(B) 560000 floor(us) 44742.4 x_floor 2.00", 0), 0u);
  EXPECT_EQ(jsonLine(r, o, 6).find("select"), std::string::npos);
}

// The settings line names UCX's variables and Tessera's settings, sorted; never the launcher's
// (the job secret above all) nor other variables.
TEST(BenchReport, SettingsLineNamesUcxAndTesseraSettingsOnly) {
  std::map<std::string, std::string> env = {
      {"UCX_TCP_SNDBUF", "64k"},  {"TSR_CHUNK_BYTES", "262144"}, {"TSR_JOB_SECRET", "s3cret"},
      {"TSR_RANK", "0"},          {"TSR_PEERS", "a:1,b:2"},      {"HOME", "/root"},
      {"TSR_NOT_A_SETTING", "x"}, {"UCX_TLS", "tcp,self"},       {"TSR_ALGO", "ring"}};
  EXPECT_EQ(settingsLine(env),
            "# settings: TSR_ALGO=ring TSR_CHUNK_BYTES=262144 UCX_TCP_SNDBUF=64k UCX_TLS=tcp,self\n");
  EXPECT_EQ(settingsLine({{"HOME", "/root"}, {"TSR_WORLD_SIZE", "4"}}),
            "# settings: defaults (no UCX_ or TSR_ settings)\n");
}

// TCP results depend on the kernel's congestion control, so the header names it when known,
// and it is read from the kernel (every Linux kernel has one set).
TEST(BenchReport, HeaderNamesTheTcpCongestionControl) {
  EXPECT_EQ(congestionControlLine("bbr"), "# tcp congestion control (rank 0's host): bbr\n");
  EXPECT_EQ(congestionControlLine(""), "");
  std::string cc = tcpCongestionControl();
  EXPECT_FALSE(cc.empty());
  EXPECT_EQ(cc.find_first_of(" \n"), std::string::npos) << cc;
}

}  // namespace
}  // namespace tsr::tools::bench
