// tsr-bench's report (bench_report.h): bandwidth factors, the table, the peer format, JSON
// lines, and the floors of the compressed and sparse rows.
#include <gtest/gtest.h>

#include <sstream>

#include "tools/bench/bench_options.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/tests/csv_fields.h"

namespace tsr::tools::bench {
namespace {

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
  std::string text = formatRow(r, o, 4);  // no figures but the floor, then the error
  std::istringstream failed(text.substr(0, text.find('\n')));
  fields.clear();
  for (std::string f; failed >> f;) fields.push_back(f);
  ASSERT_EQ(fields.size(), 11u) << text;
  for (size_t i = 3; i < 8; ++i) EXPECT_EQ(fields[i], "-") << text;
  EXPECT_EQ(fields[9], "-") << text;
  EXPECT_EQ(fields[10], "FAIL") << text;
  EXPECT_NE(text.find("\n#   error: rank 2: timed out\n"), std::string::npos) << text;
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

// The footer's average is over the sizes measured: the size that failed is not a 0 in it.
TEST(BenchReport, AverageLeavesOutTheFailedSize) {
  BenchOptions o;
  BenchRow good;
  good.bytes = 1000000;
  good.timeUs = 1000;  // 1 GB/s algbw
  BenchRow failed = good;
  failed.timeUs = 0;
  failed.error = "TSR_ERR_TIMEOUT: rank 1 stopped responding";
  EXPECT_DOUBLE_EQ(averageBusbw({good, failed}, Collective::kAllgather, 2),
                   averageBusbw({good}, Collective::kAllgather, 2));
  EXPECT_GT(averageBusbw({good}, Collective::kAllgather, 2), 0);
  EXPECT_EQ(averageBusbw({failed}, Collective::kAllgather, 2), 0);
  EXPECT_NE(footer({good, failed}, o, 2).find("# Failed sizes        : 1"), std::string::npos);
}

// A size that failed claims no count of wrong values in any format (CSV and JSON said 0): the
// figures are empty / null and the error is given whole, however many lines, commas and quotes
// it holds (CSV quoted as RFC 4180 says, JSON escaped, each table line a comment).
TEST(BenchReport, FailedSizeClaimsNoWrongCountInAnyFormat) {
  BenchRow r;
  r.bytes = 4096;
  r.count = 1024;
  r.algo = "ring";
  r.wrong = 0;
  r.error = "TSR_ERR_TIMEOUT: rank 2, \"tsr1\", stopped responding\n\tlast heard 2 s ago";
  BenchOptions o;
  o.format = "csv";
  ASSERT_EQ(header(o, 4, ""), "size,count,type,redop,algo,nranks,time_us,algbw,busbw,wire_bytes,wrong,error\n");
  std::string csv = formatRow(r, o, 4);
  ASSERT_EQ(csv.back(), '\n');
  EXPECT_EQ(csv,
            "4096,1024,f32,sum,ring,4,,,,,,\"TSR_ERR_TIMEOUT: rank 2, \"\"tsr1\"\", stopped responding\n"
            "\tlast heard 2 s ago\"\n");
  std::vector<std::string> f = testing::csvFields(csv.substr(0, csv.size() - 1));
  ASSERT_EQ(f.size(), 12u) << csv;
  for (size_t i = 6; i < 11; ++i) EXPECT_EQ(f[i], "") << i << ": " << csv;
  EXPECT_EQ(f[11], r.error);
  std::string json = jsonLine(r, o, 4);
  EXPECT_NE(json.find("\"time_us\": null, \"algbw\": null, \"busbw\": null, \"wire_bytes\": null, \"wrong\": null"),
            std::string::npos)
      << json;
  EXPECT_NE(
      json.find("\"error\": \"TSR_ERR_TIMEOUT: rank 2, \\\"tsr1\\\", stopped responding\\n\\tlast heard 2 s ago\"}\n"),
      std::string::npos)
      << json;
  EXPECT_EQ(json.find('\n'), json.size() - 1) << json;  // one line
  o.format = "table";
  std::string table = formatRow(r, o, 4);
  EXPECT_NE(
      table.find("\n#   error: TSR_ERR_TIMEOUT: rank 2, \"tsr1\", stopped responding\n#   \tlast heard 2 s ago\n"),
      std::string::npos)
      << table;
  // A row that ran: figures, the count, an empty error; a field with a comma is quoted.
  r.error.clear();
  r.algo = "a,b";
  r.timeUs = 10;
  o.format = "csv";
  f = testing::csvFields(formatRow(r, o, 4).substr(0, formatRow(r, o, 4).size() - 1));
  ASSERT_EQ(f.size(), 12u) << formatRow(r, o, 4);
  EXPECT_EQ(f[4], "a,b");
  EXPECT_EQ(f[6], "10.00");
  EXPECT_EQ(f[10], "0");
  EXPECT_EQ(f[11], "");
  EXPECT_NE(jsonLine(r, o, 4).find("\"wrong\": 0}"), std::string::npos) << jsonLine(r, o, 4);
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
  // onebit: a dense payload, no sparse floor; its header says so instead of SparDL's density.
  r.sparse.floorApplies = false;
  EXPECT_EQ(splitLine(r, o, 6), "#   compressed nnz 41946 sent(B) 560000\n");
  o.algo = "onebit";
  const std::string header = tsr::tools::bench::header(o, 6, "");
  EXPECT_NE(header.find("# onebit: size is the logical f32 size (count*4); nnz: result non-zeros; a dense payload"),
            std::string::npos)
      << header;
  EXPECT_EQ(header.find("SparDL's"), std::string::npos) << header;
}

// The title names the ring's order and the hosts: hundreds of ranks make it longer than any
// fixed buffer (it was cut at 512 bytes, past about 130 ranks), in every format.
TEST(BenchReport, HeaderKeepsAnyNumberOfRanks) {
  std::string ring;
  for (int r = 0; r < 300; ++r) ring += (r ? " " : "") + std::to_string(r);
  const std::string note = "UCX transport, hosts node-000..node-299, ring " + ring;
  for (const char* format : {"table", "peer"}) {
    BenchOptions o;
    o.format = format;
    const std::string h = header(o, 300, note, "# settings: defaults\n");
    EXPECT_NE(h.find(note + (o.format == "peer" ? "\n" : "; 5 warmup + 20 timed iterations per size\n")),
              std::string::npos)
        << format << ": " << h;
    EXPECT_NE(h.find("\n# settings: defaults\n"), std::string::npos) << h;
  }
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
