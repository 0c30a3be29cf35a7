// ChildProcess: runs a program with its stdout and stderr captured separately, for the tests
// that drive the real tsrun binary. Test-only helper.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace tsr::tools::tsrun::testing {

struct RunResult {
  int waitStatus = 0;
  bool timedOut = false;  // the test's own limit; the child was SIGKILLed
  std::string out;
  std::string err;
  double seconds = 0;
  int exitCode() const;  // exit status, 128 + signal, or -1
  std::vector<std::string> outLines() const;
  std::vector<std::string> errLines() const;
};

class ChildProcess {
 public:
  // env entries ("NAME=VALUE") are added to (or replace in) this process's environment.
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Reads output until stdout contains needle; false after seconds.
  bool waitForOutput(const std::string& needle, double seconds);
  void signal(int sig);
  // Reads everything and waits for the exit; SIGKILLs the child after seconds.
  RunResult finish(double seconds);

 private:
  bool pump(int timeoutMs);  // false when both pipes are closed

  pid_t pid_ = -1;
  int fds_[2] = {-1, -1};
  RunResult result_;
  double start_ = 0;
};

// Runs argv to the end (at most seconds).
RunResult run(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}, double seconds = 30);

double nowSeconds();

// True once pid no longer runs, within seconds (a zombie waiting for init to reap it counts as
// gone).
bool processGone(pid_t pid, double seconds);

}  // namespace tsr::tools::tsrun::testing
