// tsr-bench under the real tsrun: every collective checks clean for several N; a planted wrong
// value is counted and makes the exit status non-zero; --json writes one object per size.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tools/tsrun/tests/child_process.h"

namespace {

using tsr::tools::tsrun::testing::ChildProcess;
using tsr::tools::tsrun::testing::RunResult;

RunResult bench(int n, std::vector<std::string> args) {
  std::vector<std::string> argv{TSRUN_PATH, "-np", std::to_string(n), TSR_BENCH_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess p(argv);
  return p.finish(120);
}

std::string describe(const RunResult& r) { return "exit " + std::to_string(r.exitCode()) + "\n" + r.out + r.err; }

class BenchRanks : public ::testing::TestWithParam<int> {};

TEST_P(BenchRanks, EveryCollectiveChecksClean) {
  for (const char* coll : {"allreduce", "allgather", "reduce_scatter", "broadcast"}) {
    RunResult r = bench(GetParam(), {"-b", "8", "-e", "64K", "-f", "8", "-n", "2", "-w", "1", "-c", "1",
                                     "-d", "f64", "-o", "max", "--collective", coll});
    EXPECT_EQ(r.exitCode(), 0) << coll << "\n" << describe(r);
    EXPECT_NE(r.out.find("Out of bounds values : 0 OK"), std::string::npos) << coll << "\n" << describe(r);
  }
}

INSTANTIATE_TEST_SUITE_P(N, BenchRanks, ::testing::Values(1, 2, 3, 4));

TEST(Bench, PlantedWrongValueIsCountedAndFailsTheRun) {
  RunResult r = bench(3, {"-b", "1K", "-e", "1K", "-n", "2", "-w", "0", "-c", "1", "--plant-wrong", "1"});
  EXPECT_NE(r.exitCode(), 0) << describe(r);
  EXPECT_NE(r.out.find("FAILED"), std::string::npos) << describe(r);
  EXPECT_EQ(r.out.find("Out of bounds values : 0 "), std::string::npos) << describe(r);
}

TEST(Bench, JsonAndMinBusbw) {
  std::string file = (std::filesystem::temp_directory_path() / "tsr_bench_test.json").string();
  RunResult r = bench(2, {"-b", "64", "-e", "256", "-f", "2", "-n", "2", "-w", "0", "--json", file,
                          "--min-busbw", "1000000"});
  EXPECT_NE(r.exitCode(), 0) << "an impossible --min-busbw must fail\n" << describe(r);
  std::ifstream in(file);
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    EXPECT_NE(line.find("\"wire_bytes\""), std::string::npos) << line;
    EXPECT_NE(line.find("\"nranks\": 2"), std::string::npos) << line;
  }
  EXPECT_EQ(lines, 3);
  std::filesystem::remove(file);
}

}  // namespace
