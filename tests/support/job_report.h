// Reading a tsrun job's outcome in process tests: the whole run for a failure message, and the
// line each rank printed about itself ("[r] rank r: ...", tests/proc/fault_worker.cc).
#pragma once

#include <string>

#include "tools/tsrun/tests/child_process.h"

namespace tsr::testing {

inline std::string describe(const tools::tsrun::testing::RunResult& r) {
  return "exit " + std::to_string(r.exitCode()) + " after " + std::to_string(r.seconds) + " s\n--- stdout\n" + r.out +
         "--- stderr\n" + r.err;
}

// The line rank r printed about its outcome, or "" (its "raising ..." line is not one).
inline std::string outcomeOf(const tools::tsrun::testing::RunResult& r, int rank) {
  std::string prefix = "[" + std::to_string(rank) + "] rank " + std::to_string(rank) + ": ";
  for (const auto& line : r.outLines())
    if (line.rfind(prefix, 0) == 0 && line.find("raising") == std::string::npos) return line;
  return "";
}

}  // namespace tsr::testing
