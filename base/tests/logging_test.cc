// base/logging: TSR_LOG_FILE patterns (%r, %h), the rank in every line, and level filtering.
// The logger registry is process-wide, so each test configures it afresh and writes to its own
// file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <latch>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/logging.h"

namespace tsr {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tsr_logging_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    log::configure({});  // back to stderr, closing the test's file
    fs::remove_all(dir_);
  }
  // Configures a file sink, logs one line per level through `layer`, flushes, and returns the
  // file's text.
  std::string logAllLevels(const std::string& level, int rank, const std::string& layer) {
    std::string pattern = (dir_ / "log-%r-%h.txt").string();
    log::configure({level, pattern, rank, "nodeA"});
    auto logger = log::get(layer);
    logger->trace("trace line");
    logger->debug("debug line");
    logger->info("info line");
    logger->warn("warn line");
    logger->error("error line");
    logger->flush();
    fs::path file = dir_ / ("log-" + std::to_string(rank) + "-nodeA.txt");
    EXPECT_TRUE(fs::exists(file)) << file;
    return readFile(file);
  }
  fs::path dir_;
};

TEST(LogFilePattern, ExpandsRankAndHostEverywhereAndLeavesOtherPercentsAlone) {
  EXPECT_EQ(log::expandFilePattern("/tmp/tsr-%r.log", 3, "nodeA"), "/tmp/tsr-3.log");
  EXPECT_EQ(log::expandFilePattern("/logs/%h/rank%r-of-%h.txt", 12, "gpu-07"), "/logs/gpu-07/rank12-of-gpu-07.txt");
  EXPECT_EQ(log::expandFilePattern("%r%r%h", 0, "h"), "00h");
  EXPECT_EQ(log::expandFilePattern("plain.log", 5, "x"), "plain.log");
  EXPECT_EQ(log::expandFilePattern("100%-%d-%", 1, "x"), "100%-%d-%");
}

TEST_F(LoggingTest, FileIsNamedByRankAndHostAndEveryLineCarriesTheRank) {
  std::string text = logAllLevels("info", 7, "logging-test-a");
  EXPECT_NE(text.find("info line"), std::string::npos) << text;
  std::istringstream lines(text);
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    EXPECT_NE(line.find("[tessera rank 7]"), std::string::npos) << line;
    EXPECT_NE(line.find("[logging-test-a]"), std::string::npos) << line;
  }
  EXPECT_EQ(count, 3) << text;  // info, warn, error
}

TEST_F(LoggingTest, LevelFiltersLowerLevels) {
  std::string warn = logAllLevels("warn", 1, "logging-test-b");
  EXPECT_EQ(warn.find("debug line"), std::string::npos) << warn;
  EXPECT_EQ(warn.find("info line"), std::string::npos) << warn;
  EXPECT_EQ(warn.find("trace line"), std::string::npos) << warn;
  EXPECT_NE(warn.find("warn line"), std::string::npos) << warn;
  EXPECT_NE(warn.find("error line"), std::string::npos) << warn;

  std::string error = logAllLevels("error", 2, "logging-test-b");
  EXPECT_EQ(error.find("warn line"), std::string::npos) << error;
  EXPECT_NE(error.find("error line"), std::string::npos) << error;

  // Reconfiguring applies to loggers that already exist: debug now shows, trace still not.
  std::string debug = logAllLevels("debug", 3, "logging-test-b");
  EXPECT_NE(debug.find("debug line"), std::string::npos) << debug;
  EXPECT_NE(debug.find("[debug]"), std::string::npos) << debug;
  EXPECT_EQ(debug.find("trace line"), std::string::npos) << debug;

  std::string trace = logAllLevels("trace", 4, "logging-test-b");
  EXPECT_NE(trace.find("trace line"), std::string::npos) << trace;
}

// Ranks run as threads of one process share the loggers: each thread's lines carry its own
// rank, not the rank that configured the loggers last.
TEST_F(LoggingTest, EachThreadsLinesCarryItsOwnRank) {
  std::string pattern = (dir_ / "log-%r-%h.txt").string();
  log::configure({"info", pattern, 3, "nodeA"});
  auto logger = log::get("logging-test-threads");
  std::thread one([&] {
    log::setThreadRank(1);
    logger->info("from the thread of rank 1");
  });
  one.join();
  {
    log::ThreadRankScope scope(2);
    logger->info("from rank 2's scope");
  }
  logger->info("from the configured rank");
  logger->flush();
  std::string text = readFile(dir_ / "log-3-nodeA.txt");
  std::istringstream lines(text);
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    std::string want = line.find("rank 1's") != std::string::npos || line.find("of rank 1") != std::string::npos
                           ? "[tessera rank 1]"
                       : line.find("rank 2's") != std::string::npos ? "[tessera rank 2]"
                                                                    : "[tessera rank 3]";
    EXPECT_NE(line.find(want), std::string::npos) << line;
  }
  EXPECT_EQ(count, 3) << text;
}

// Ranks run as threads configure the shared loggers (each its own rank, so its own file) while
// the others log: no line is lost or torn, nothing crashes (a logger's sink list was once
// swapped under a thread writing through it).
TEST_F(LoggingTest, ConfiguringWhileOtherThreadsLogLosesNoLine) {
  const std::string pattern = (dir_ / "log-%r-%h.txt").string();
  log::configure({"info", pattern, 0, "nodeA"});
  constexpr int kWriters = 3, kLines = 1500, kConfigures = 300;
  std::latch start(kWriters + 1);  // every thread set up before any writes or configures
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w)
    threads.emplace_back([w, &start] {
      auto logger = log::get("logging-test-race-" + std::to_string(w % 2));
      start.arrive_and_wait();
      for (int i = 0; i < kLines; ++i) logger->warn("line {} of writer {}", i, w);
    });
  threads.emplace_back([&] {
    start.arrive_and_wait();
    for (int i = 0; i < kConfigures; ++i) log::configure({"info", pattern, i % 4, "nodeA"});
  });
  for (auto& t : threads) t.join();
  log::configure({});  // closes the last file
  int lines = 0;
  for (int rank = 0; rank < 4; ++rank) {
    std::istringstream in(readFile(dir_ / ("log-" + std::to_string(rank) + "-nodeA.txt")));
    for (std::string line; std::getline(in, line); ++lines)
      EXPECT_NE(line.find("[tessera rank "), std::string::npos) << line;
  }
  EXPECT_EQ(lines, kWriters * kLines);
}

TEST_F(LoggingTest, AnUnwritableFileIsNamedAndTheLogGoesToStandardError) {
  // Under a plain file: no directory can be made there (spdlog makes missing ones), root or not.
  std::ofstream(dir_ / "plain").put('x');
  const std::string pattern = (dir_ / "plain" / "rank-%r.log").string();
  ::testing::internal::CaptureStderr();
  log::configure({"info", pattern, 3, "h"});
  log::get("test")->warn("still logged");
  log::get("test")->flush();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("tessera rank 3: TSR_LOG_FILE=" + pattern + ": cannot write " + (dir_ / "plain").string() +
                     "/rank-3.log"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("logging to standard error"), std::string::npos) << err;
  EXPECT_NE(err.find("still logged"), std::string::npos) << err;
}

}  // namespace
}  // namespace tsr
