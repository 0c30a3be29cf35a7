// What the tsr-bench end-to-end tests (bench_e2e_test.cc, bench_marsit_e2e_test.cc,
// bench_sparse_e2e_test.cc) share: running tsr-bench under the real tsrun, a failure message
// with everything it printed, and the checks of its CSV and --json output that the
// compressed runners' tests make alike. The checks use EXPECT_*, so they fail the calling test.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "base/self_path.h"
#include "tools/bench/tests/csv_fields.h"
#include "tools/tsrun/tests/child_process.h"

namespace tsr::tools::bench::testing {

using tsr::tools::tsrun::testing::ChildProcess;
using tsr::tools::tsrun::testing::RunResult;

// tsrun -np n tsr-bench args..., given 120 s.
inline RunResult bench(int n, std::vector<std::string> args) {
  std::vector<std::string> argv{besideSelf("tsrun"), "-np", std::to_string(n), besideSelf("tsr-bench")};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess p(argv);
  return p.finish(120);
}

inline std::string describe(const RunResult& r) {
  return "exit " + std::to_string(r.exitCode()) + "\n" + r.out + r.err;
}

inline std::string tempFile(const std::string& name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

inline size_t countOf(const std::string& text, const std::string& needle) {
  size_t k = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++k;
  return k;
}

// Every line of the --json file must hold every key; returns how many lines it has.
inline int expectEveryJsonLineHolds(const std::string& file, std::initializer_list<const char*> keys) {
  std::ifstream in(file);
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines)
    for (const char* key : keys) EXPECT_NE(line.find(key), std::string::npos) << key << " in " << line;
  return lines;
}

// CSV stays parseable: every output line is a header, a row of 12 fields or a '#' comment.
inline void expectCsvRowsOf12Fields(const RunResult& r) {
  for (const std::string& line : r.outLines()) {
    std::string body = line.substr(line.find(']') + 2);  // tsrun's "[0] " prefix
    if (body.empty() || body[0] == '#') continue;
    EXPECT_EQ(csvFields(body).size(), 12u) << body;
  }
}

}  // namespace tsr::tools::bench::testing
