// The fields of one CSV line as RFC 4180 reads them (quoted fields, doubled quotes, commas and
// line breaks inside quotes), for the tests of tsr-bench's -F csv.
#pragma once

#include <string>
#include <vector>

namespace tsr::tools::bench::testing {

inline std::vector<std::string> csvFields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

}  // namespace tsr::tools::bench::testing
