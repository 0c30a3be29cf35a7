// Logging: spdlog, one logger per layer ("transport", "runtime", ...), every line carrying the
// rank. runtime::Config decides level and file; before that, warnings go to stderr.
#pragma once

#include <memory>
#include <string>

#include <spdlog/spdlog.h>

namespace tsr::log {

struct Options {
  std::string level = "warn";  // error|warn|info|debug|trace
  std::string file;            // empty = stderr; %r -> rank, %h -> host
  int rank = -1;
  std::string host;
};

// Applies to every layer logger, existing and future. Safe to call more than once.
void configure(const Options& options);

// The logger for one layer; created on first use with the current options.
std::shared_ptr<spdlog::logger> get(const std::string& layer);

// Expands %r and %h in a TSR_LOG_FILE pattern.
std::string expandFilePattern(const std::string& pattern, int rank, const std::string& host);

// False when the level name is not one of error|warn|info|debug|trace.
bool isValidLevel(const std::string& level);

}  // namespace tsr::log
