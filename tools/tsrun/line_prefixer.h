// LinePrefixer: turns one rank's output stream into whole lines that start with "[rank] ".
//
// Bytes arrive in arbitrary pieces (whatever one read() returned); only complete lines are
// released, so lines of different ranks never interleave mid-line when the launcher writes
// each released block with one write(). A line longer than kMaxLine without a newline is
// released in kMaxLine pieces (each prefixed and newline-terminated) to bound memory; the
// unterminated last line of a stream is released by finish(). Pure: no I/O.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tsr::tools::tsrun {

class LinePrefixer {
 public:
  static constexpr size_t kMaxLine = 1 << 20;

  explicit LinePrefixer(int rank);

  // Appends data; returns the complete lines now available, each prefixed (may be empty).
  std::string feed(std::string_view data);

  // Returns the pending partial line, prefixed and newline-terminated (empty if none).
  std::string finish();

  bool hasPending() const { return !pending_.empty(); }

 private:
  std::string prefix_;
  std::string pending_;
};

}  // namespace tsr::tools::tsrun
