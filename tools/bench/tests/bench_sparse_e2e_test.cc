// tsr-bench --algo spardl | topk under the real tsrun: every check passes (identical
// results, sparsity per block or in all, conservation with the residuals) for N = 1..4, teams
// (R-SAG T=2 at N=4, B-SAG T=3 at N=3) and the baseline at N = 1..3 (two-level, f32 and f16
// host averages, at N = 4), with a split line per row;
// a planted error is counted exactly; combinations they cannot serve fail naming the option
// and value; --json carries the sparse split and floor.
#include <gtest/gtest.h>

#include <filesystem>
#include <tuple>

#include "tools/bench/tests/bench_e2e_support.h"

namespace {

using namespace tsr::tools::bench::testing;

struct Case {
  std::string algo;
  int n, teams;
  std::string row;  // the algo column
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.algo << " N=" << c.n << " T=" << c.teams; }

class SparseBench : public ::testing::TestWithParam<Case> {};

TEST_P(SparseBench, ChecksCleanWithASplitPerRow) {
  const Case& c = GetParam();
  // 1000 B = 250 elements (k_b = 1..3), 32000 B, 1024000 B; 3 checked steps carry residuals.
  RunResult r = bench(c.n, {"--algo", c.algo, "--teams", std::to_string(c.teams), "-b", "1000", "-e", "1024000", "-f",
                            "32", "-n", "3", "-w", "1", "-c", "1", "--rate", "1"});
  ASSERT_EQ(r.exitCode(), 0) << describe(r);
  EXPECT_NE(r.out.find("Out of bounds values : 0 OK"), std::string::npos) << describe(r);
  // Without -o each leaves its own reduction, and the row says so: spardl sums, top-k averages.
  EXPECT_EQ(countOf(r.out, (c.algo == "spardl" ? " sum " : " avg ") + c.row + " "), 3u) << describe(r);
  std::string split = c.algo == "spardl" ? "#   split(us) select " : "#   sparse nnz ";
  EXPECT_EQ(countOf(r.out, split), 3u) << describe(r);
  // One rank has no wire and no floor; several have both.
  EXPECT_EQ(countOf(r.out, "x_floor -"), c.n == 1 ? 3u : 0u) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(AlgoN, SparseBench,
                         ::testing::Values(Case{"spardl", 1, 1, "spardl"}, Case{"spardl", 2, 1, "spardl"},
                                           Case{"spardl", 3, 1, "spardl"}, Case{"spardl", 4, 1, "spardl"},
                                           Case{"spardl", 4, 2, "spardl-rsag-T2"},
                                           Case{"spardl", 3, 3, "spardl-bsag-T3"}, Case{"topk", 1, 1, "topk"},
                                           Case{"topk", 2, 1, "topk"}, Case{"topk", 3, 1, "topk"},
                                           // Two-level on one host: the grid of N = 4 is 2 x 2.
                                           Case{"topk-2level", 4, 1, "topk-2level"},
                                           Case{"topk-2level-fp16", 4, 1, "topk-2level-fp16"}),
                         [](const auto& info) {
                           const Case& c = info.param;
                           std::string name = c.algo == "spardl" ? "SparDL" : "TopkAllgather";
                           if (c.algo.find("2level") != std::string::npos)
                             name += c.algo.find("fp16") != std::string::npos ? "2LevelFp16" : "2Level";
                           return name + "N" + std::to_string(c.n) + "T" + std::to_string(c.teams);
                         });

// -o names the other reduction: the tensor leaves it (op=), the check expects it, the row says it.
TEST(SparseBench, RedopIsTheTensorsOp) {
  for (const auto& [algo, redop] : {std::pair{"spardl", "avg"}, std::pair{"topk", "sum"}, std::pair{"onebit", "sum"}}) {
    RunResult r =
        bench(3, {"--algo", algo, "-o", redop, "-b", "4K", "-e", "64K", "-f", "16", "-n", "2", "-w", "1", "-c", "1"});
    ASSERT_EQ(r.exitCode(), 0) << algo << " -o " << redop << "\n" << describe(r);
    EXPECT_NE(r.out.find("Out of bounds values : 0 OK"), std::string::npos) << describe(r);
    EXPECT_EQ(countOf(r.out, std::string(" ") + redop + " " + algo + " "), 2u) << describe(r);
  }
}

TEST(SparseBench, PlantedErrorsAreCountedExactly) {
  for (const char* algo : {"spardl", "topk"}) {
    // Rank 1 doubles its first non-zero in each of 2 checked steps: the result then differs
    // across the 3 ranks and each counts it (3 * 2); rank 0 owns that element in the
    // conservation check and its own copy is right.
    RunResult r =
        bench(3, {"--algo", algo, "-b", "4K", "-e", "4K", "-n", "2", "-w", "1", "-c", "1", "--plant-wrong", "1"});
    EXPECT_NE(r.exitCode(), 0) << describe(r);
    EXPECT_NE(r.out.find("Out of bounds values : 6 FAILED"), std::string::npos) << algo << "\n" << describe(r);
    // One rank: nothing to compare, conservation sees it: 1 per step.
    RunResult one =
        bench(1, {"--algo", algo, "-b", "4K", "-e", "4K", "-n", "2", "-w", "0", "-c", "1", "--plant-wrong", "0"});
    EXPECT_NE(one.exitCode(), 0) << describe(one);
    EXPECT_NE(one.out.find("Out of bounds values : 2 FAILED"), std::string::npos) << algo << "\n" << describe(one);
  }
}

TEST(SparseBench, CombinationsTheyCannotServeAreNamed) {
  struct Bad {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Bad& c :
       {Bad{{"--algo", "spardl", "-d", "f64"}, "--algo spardl: -d f64"},
        Bad{{"--algo", "topk", "-d", "bf16"}, "--algo topk: -d bf16"},
        Bad{{"--algo", "spardl", "--op", "allgather"}, "--algo spardl: --op allgather"},
        Bad{{"--algo", "topk", "-o", "max"}, "--algo topk: -o max"},
        Bad{{"--algo", "spardl", "--teams", "3", "--sag", "r"}, "--sag r needs a power-of-two --teams"},
        Bad{{"--algo", "spardl", "--density", "0"}, "--density 0"}, Bad{{"--algo", "spardl", "--sag", "x"}, "--sag"}}) {
    RunResult r = bench(2, c.args);
    EXPECT_NE(r.exitCode(), 0) << describe(r);
    EXPECT_NE(r.err.find(c.message), std::string::npos) << describe(r);
  }
  // Whether the teams divide N is known under the communicator: the row says so.
  RunResult r = bench(3, {"--algo", "spardl", "--teams", "2", "-b", "4K", "-e", "4K", "-n", "1"});
  EXPECT_NE(r.exitCode(), 0) << describe(r);
  EXPECT_NE(r.out.find("error: --algo spardl --density 0.01 --teams 2 --sag auto: TSR_ERR_INVALID_ARGUMENT"),
            std::string::npos)
      << describe(r);
  EXPECT_NE(r.out.find("teams=2 is not accepted"), std::string::npos) << describe(r);
}

// The same failed size in CSV and JSON: no count of wrong values (they said 0), the error given.
TEST(SparseBench, FailedSizeInCsvAndJsonClaimsNoWrongCount) {
  std::string file = tempFile("tsr_bench_failed_size.json");
  RunResult r =
      bench(3, {"--algo", "spardl", "--teams", "2", "-b", "4K", "-e", "4K", "-n", "1", "-F", "csv", "--json", file});
  EXPECT_NE(r.exitCode(), 0) << describe(r);
  expectCsvRowsOf12Fields(r);
  std::string row;
  for (const std::string& line : r.outLines())
    if (line.rfind("[0] 4096,", 0) == 0) row = line.substr(4);
  std::vector<std::string> f = csvFields(row);
  ASSERT_EQ(f.size(), 12u) << describe(r);
  EXPECT_EQ(f[10], "") << row;
  EXPECT_NE(f[11].find("teams=2 is not accepted"), std::string::npos) << row;
  EXPECT_EQ(expectEveryJsonLineHolds(file, {"\"wrong\": null", "\"error\": \"--algo spardl --density 0.01 --teams 2"}),
            1);
  std::filesystem::remove(file);
}

TEST(SparseBench, DenseAlgorithmsIgnoreTheSparseOptions) {
  // cluster.sh passes one argument list to every algorithm of ALGOS.
  RunResult r = bench(2, {"--algo", "ring", "--density", "0.01", "--teams", "2", "--sag", "b", "-b", "4K", "-e", "4K",
                          "-n", "1", "-c", "1"});
  ASSERT_EQ(r.exitCode(), 0) << describe(r);
  EXPECT_EQ(countOf(r.out, "#   split"), 0u) << describe(r);
  EXPECT_EQ(countOf(r.out, "#   sparse"), 0u) << describe(r);
  EXPECT_EQ(countOf(r.out, "density"), 0u) << describe(r);
}

TEST(SparseBench, JsonCarriesTheSparseSplitAndFloor) {
  std::string file = tempFile("tsr_bench_sparse_test.json");
  RunResult r = bench(2, {"--algo", "spardl", "-b", "64K", "-e", "128K", "-f", "2", "-n", "2", "-w", "0", "--rate",
                          "10", "--json", file, "-F", "csv"});
  ASSERT_EQ(r.exitCode(), 0) << describe(r);
  int lines = expectEveryJsonLineHolds(
      file, {"\"algo\": \"spardl\"", "\"sparse\": {\"select\": ", "\"nnz\": ", "\"density\": 0.01",
             "\"floor_us\": ", "\"x_floor\": ", "\"wire_bytes\": "});
  EXPECT_EQ(lines, 2);
  expectCsvRowsOf12Fields(r);
  std::filesystem::remove(file);
}

}  // namespace
