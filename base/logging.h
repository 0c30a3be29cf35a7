// Logging: spdlog, one logger per layer ("transport", "runtime", ...), every line carrying the
// rank. runtime::Config decides level and file; before that, warnings go to stderr.
#pragma once

#include <memory>
#include <string>
#include <string_view>

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

// The rank this thread's lines carry, over Options::rank (-1: back to it). Ranks run as
// threads of one process share the loggers: each rank's threads (the one that created its
// communicator, its progress thread, a caller driving it) label their own lines.
void setThreadRank(int rank);

// Sets the thread's rank for a scope and restores the previous one after.
class ThreadRankScope {
 public:
  explicit ThreadRankScope(int rank);
  ~ThreadRankScope();
  ThreadRankScope(const ThreadRankScope&) = delete;
  ThreadRankScope& operator=(const ThreadRankScope&) = delete;

 private:
  int previous_;
};

// Expands %r and %h in a TSR_LOG_FILE pattern.
std::string expandFilePattern(const std::string& pattern, int rank, const std::string& host);

// False when the level name is not one of error|warn|info|debug|trace.
bool isValidLevel(const std::string& level);

// Text from outside (a peer, a stranger) made safe to log: bytes outside printable ASCII and
// the backslash become \xNN, and more than maxBytes of it end in "...", so no control
// character, terminal escape or forged line ever reaches a log verbatim.
std::string printable(std::string_view text, size_t maxBytes = 64);

}  // namespace tsr::log
