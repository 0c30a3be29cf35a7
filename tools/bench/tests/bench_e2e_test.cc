// tsr-bench under the real tsrun: every collective checks clean for several N; a planted wrong
// value is counted exactly and makes the exit status non-zero; --json writes one object per
// size with every required field; -F csv a header and one line per size.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tools/bench/tests/bench_e2e_support.h"

namespace {

using namespace tsr::tools::bench::testing;

// Rank 0's output lines without tsrun's "[0] " prefix; comments (#) only when asked.
std::vector<std::string> rank0Lines(const std::string& out, bool comments) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("[0] ", 0) != 0) continue;
    line = line.substr(4);
    if (!line.empty() && (comments || line[0] != '#')) lines.push_back(line);
  }
  return lines;
}

class BenchRanks : public ::testing::TestWithParam<int> {};

TEST_P(BenchRanks, EveryCollectiveChecksClean) {
  for (const char* coll : {"allreduce", "allgather", "reduce_scatter", "broadcast"}) {
    RunResult r = bench(GetParam(), {"-b", "8", "-e", "64K", "-f", "8", "-n", "2", "-w", "1", "-c", "1", "-d", "f64",
                                     "-o", "max", "--op", coll});
    EXPECT_EQ(r.exitCode(), 0) << coll << "\n" << describe(r);
    EXPECT_NE(r.out.find("Out of bounds values : 0 OK"), std::string::npos) << coll << "\n" << describe(r);
  }
}

INSTANTIATE_TEST_SUITE_P(N, BenchRanks, ::testing::Values(1, 2, 3, 4));

// Rank 1 corrupts one element (the last) of its result in every timed iteration: #wrong is exactly the
// number of timed iterations (-n 3) in the row, the footer and the JSON line, whatever the
// collective.
TEST(Bench, PlantedWrongValueIsCountedAndFailsTheRun) {
  std::string file = tempFile("tsr_bench_planted.json");
  for (const char* coll : {"allreduce", "allgather", "reduce_scatter", "broadcast"}) {
    RunResult r = bench(3, {"-b", "1K", "-e", "1K", "-n", "3", "-w", "1", "-c", "1", "--op", coll, "--json", file,
                            "--plant-wrong", "1"});
    EXPECT_NE(r.exitCode(), 0) << coll << "\n" << describe(r);
    EXPECT_NE(r.out.find("# Out of bounds values : 3 FAILED"), std::string::npos) << coll << "\n" << describe(r);
    std::ifstream in(file);
    std::string line;
    ASSERT_TRUE(std::getline(in, line)) << coll << ": no JSON line\n" << describe(r);
    EXPECT_NE(line.find("\"wrong\": 3,"), std::string::npos) << coll << ": " << line;
    EXPECT_NE(line.find(std::string("\"collective\": \"") + coll + "\""), std::string::npos) << line;
    // The table's one row; its last column is #wrong.
    auto rows = rank0Lines(r.out, false);
    ASSERT_EQ(rows.size(), 1u) << coll << "\n" << describe(r);
    std::string last;
    std::istringstream words(rows[0]);
    for (std::string w; words >> w;) last = w;
    EXPECT_EQ(last, "3") << rows[0];
  }
  std::filesystem::remove(file);
}

// The same where the result spans many periods of the input pattern (64 KiB: 10 of them for
// f32), so the planted last element lies in a block other than the first.
TEST(Bench, PlantedWrongValueInALaterBlockIsCounted) {
  for (const char* coll : {"allreduce", "allgather", "reduce_scatter", "broadcast"}) {
    RunResult r =
        bench(3, {"-b", "64K", "-e", "64K", "-n", "3", "-w", "1", "-c", "1", "--op", coll, "--plant-wrong", "2"});
    EXPECT_NE(r.exitCode(), 0) << coll << "\n" << describe(r);
    EXPECT_NE(r.out.find("# Out of bounds values : 3 FAILED"), std::string::npos) << coll << "\n" << describe(r);
  }
}

// -F csv: the header line and one line per size (8, 64, 512 B), every field in place (the
// error column empty).
TEST(Bench, CsvHasTheHeaderAndOneRowPerSize) {
  RunResult r = bench(2, {"-b", "8", "-e", "512", "-f", "8",   "-n", "2",   "-w",     "0",
                          "-c", "1", "-F", "csv", "-d", "i32", "-o", "max", "--algo", "ring"});
  ASSERT_EQ(r.exitCode(), 0) << describe(r);
  std::vector<std::string> lines = rank0Lines(r.out, true);  // csv has no comment lines at all
  ASSERT_EQ(lines.size(), 4u) << describe(r);
  EXPECT_EQ(lines[0], "size,count,type,redop,algo,nranks,time_us,algbw,busbw,wire_bytes,wrong,error");
  const size_t sizes[] = {8, 64, 512};
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> f = csvFields(lines[i + 1]);
    ASSERT_EQ(f.size(), 12u) << lines[i + 1];
    EXPECT_EQ(f[0], std::to_string(sizes[i])) << lines[i + 1];
    EXPECT_EQ(f[1], std::to_string(sizes[i] / 4)) << lines[i + 1];
    EXPECT_EQ(f[2], "i32");
    EXPECT_EQ(f[3], "max");
    EXPECT_EQ(f[4], "ring");
    EXPECT_EQ(f[5], "2");
    EXPECT_GT(std::stod(f[6]), 0) << lines[i + 1];
    EXPECT_GT(std::stod(f[7]), 0) << lines[i + 1];
    EXPECT_GT(std::stod(f[8]), 0) << lines[i + 1];
    EXPECT_GT(std::stoull(f[9]), 0u) << lines[i + 1];
    EXPECT_EQ(f[10], "0") << lines[i + 1];
    EXPECT_EQ(f[11], "") << lines[i + 1];
  }
}

TEST(Bench, JsonAndMinBusbw) {
  std::string file = tempFile("tsr_bench_test.json");
  RunResult r =
      bench(2, {"-b", "64", "-e", "256", "-f", "2", "-n", "2", "-w", "0", "--json", file, "--min-busbw", "1000000"});
  EXPECT_NE(r.exitCode(), 0) << "an impossible --min-busbw must fail\n" << describe(r);
  // The header names the kernel's TCP congestion control, read here independently.
  std::string cc;
  std::ifstream("/proc/sys/net/ipv4/tcp_congestion_control") >> cc;
  EXPECT_NE(r.out.find("# tcp congestion control (rank 0's host): " + cc + "\n"), std::string::npos) << describe(r);
  std::ifstream in(file);
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    // Every documented field, with its value's shape.
    for (const char* field :
         {"\"size\": ", "\"count\": ", "\"type\": \"f32\"", "\"redop\": \"sum\"", "\"algo\": \"", "\"nranks\": 2",
          "\"time_us\": ", "\"algbw\": ", "\"busbw\": ", "\"wire_bytes\": ", "\"wrong\": 0"})
      EXPECT_NE(line.find(field), std::string::npos) << field << " missing in " << line;
    size_t size = 64u << lines;
    EXPECT_NE(line.find("\"size\": " + std::to_string(size) + ","), std::string::npos) << line;
    EXPECT_NE(line.find("\"count\": " + std::to_string(size / 4) + ","), std::string::npos) << line;
    // -n 2: two iterations, whose median (their mean) is time_us.
    std::smatch m;
    ASSERT_TRUE(
        std::regex_search(line, m, std::regex(R"re("time_us": ([0-9.]+).*"iter_us": \[([0-9.]+), ([0-9.]+)\])re")))
        << line;
    EXPECT_GT(std::stod(m[2]), 0) << line;
    EXPECT_GT(std::stod(m[3]), 0) << line;
    EXPECT_NEAR(std::stod(m[1]), (std::stod(m[2]) + std::stod(m[3])) / 2, 0.002) << line;
    EXPECT_EQ(line.front(), '{') << line;
    EXPECT_EQ(line.back(), '}') << line;
  }
  EXPECT_EQ(lines, 3);
  std::filesystem::remove(file);
}

// A factor just above 1 makes a sweep past 200 rows: a usage error before any row (it ran the
// first 201 sizes as if that were the sweep asked for).
TEST(Bench, SweepPastTheRowCapIsRefused) {
  RunResult r = bench(2, {"-f", "1.0001", "-n", "1", "-w", "0"});
  EXPECT_EQ(r.exitCode(), 2) << describe(r);
  EXPECT_NE(r.err.find("tsr-bench: -f 1.0001 from -b 8 to -e 67108864 makes more than 200 rows"), std::string::npos)
      << describe(r);
  EXPECT_TRUE(rank0Lines(r.out, false).empty()) << describe(r);
}

}  // namespace
