#include "base/logging.h"

#include <cstdio>
#include <mutex>
#include <vector>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace tsr::log {

namespace {

// Every logger writes to `out` alone, set once at its creation; configure() swaps the sink
// and the pattern inside `out`, under its lock. A logger's own sink list is not thread-safe:
// ranks run as threads configure their communicators while the others log.
struct Registry {
  std::mutex mutex;
  Options options;
  spdlog::sink_ptr sink;  // inside `out`
  std::shared_ptr<spdlog::sinks::dist_sink_mt> out = std::make_shared<spdlog::sinks::dist_sink_mt>();
  std::vector<std::shared_ptr<spdlog::logger>> loggers;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: loggers outlive static teardown
  return *r;
}

spdlog::level::level_enum parseLevel(const std::string& level) {
  if (level == "trace") return spdlog::level::trace;
  if (level == "debug") return spdlog::level::debug;
  if (level == "info") return spdlog::level::info;
  if (level == "error") return spdlog::level::err;
  if (level == "off") return spdlog::level::off;
  return spdlog::level::warn;
}

thread_local int tRank = -1;

// %* in the pattern: the thread's rank, else the configured one, else "?".
class RankFlag final : public spdlog::custom_flag_formatter {
 public:
  explicit RankFlag(int configured) : configured_(configured) {}
  void format(const spdlog::details::log_msg&, const std::tm&, spdlog::memory_buf_t& dest) override {
    int rank = tRank >= 0 ? tRank : configured_;
    std::string s = rank >= 0 ? std::to_string(rank) : "?";
    dest.append(s.data(), s.data() + s.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<RankFlag>(configured_); }

 private:
  int configured_;
};

std::unique_ptr<spdlog::formatter> makeFormatter(int rank) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<RankFlag>('*', rank).set_pattern("[%H:%M:%S.%e] [tessera rank %*] [%n] [%l] %v");
  return formatter;
}

void applyLevel(const Registry& r, spdlog::logger& logger) {
  logger.set_level(parseLevel(r.options.level));
  logger.flush_on(spdlog::level::warn);
}

spdlog::sink_ptr makeSink(const Options& o) {
  if (!o.file.empty()) {
    const std::string path = expandFilePattern(o.file, o.rank, o.host);
    try {
      return std::make_shared<spdlog::sinks::basic_file_sink_mt>(path);
    } catch (const spdlog::spdlog_ex& e) {
      // The log still goes somewhere, and says where it could not go (as NCCL_DEBUG_FILE).
      std::fprintf(stderr, "tessera rank %d: TSR_LOG_FILE=%s: cannot write %s (%s); logging to standard error\n",
                   o.rank, o.file.c_str(), path.c_str(), e.what());
    }
  }
  return std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
}

}  // namespace

void setThreadRank(int rank) { tRank = rank; }

ThreadRankScope::ThreadRankScope(int rank) : previous_(tRank) { tRank = rank; }
ThreadRankScope::~ThreadRankScope() { tRank = previous_; }

bool isValidLevel(const std::string& level) {
  return level == "off" || level == "error" || level == "warn" || level == "info" || level == "debug" ||
         level == "trace";
}

std::string expandFilePattern(const std::string& pattern, int rank, const std::string& host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      if (pattern[i + 1] == 'r') {
        out += std::to_string(rank);
        ++i;
        continue;
      }
      if (pattern[i + 1] == 'h') {
        out += host;
        ++i;
        continue;
      }
    }
    out += pattern[i];
  }
  return out;
}

void configure(const Options& options) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  bool sinkChanged = !r.sink || options.file != r.options.file || options.rank != r.options.rank;
  r.options = options;
  if (sinkChanged) {
    r.sink = makeSink(options);
    r.sink->set_formatter(makeFormatter(options.rank));
    r.out->set_sinks({r.sink});
  }
  for (auto& logger : r.loggers) applyLevel(r, *logger);
}

std::shared_ptr<spdlog::logger> get(const std::string& layer) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto& logger : r.loggers)
    if (logger->name() == layer) return logger;
  if (!r.sink) {
    r.sink = makeSink(r.options);
    r.sink->set_formatter(makeFormatter(r.options.rank));
    r.out->set_sinks({r.sink});
  }
  auto logger = std::make_shared<spdlog::logger>(layer, r.out);
  applyLevel(r, *logger);
  r.loggers.push_back(logger);
  return logger;
}

std::string printable(std::string_view text, size_t maxBytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < text.size() && i < maxBytes; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (text.size() > maxBytes) out += "...";
  return out;
}

}  // namespace tsr::log
