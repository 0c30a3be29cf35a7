#include "tools/tsrun/tests/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

extern char** environ;

namespace tsr::tools::tsrun::testing {
namespace {

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

}  // namespace

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool processGone(pid_t pid, double seconds) {
  auto running = [pid] {
    if (kill(pid, 0) != 0) return false;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pidField, comm, state;
    stat >> pidField >> comm >> state;
    return state != "Z" && state != "X";
  };
  double end = nowSeconds() + seconds;
  while (running()) {
    if (nowSeconds() > end) return false;
    usleep(20000);
  }
  return true;
}

int RunResult::exitCode() const {
  if (timedOut) return -1;
  if (WIFEXITED(waitStatus)) return WEXITSTATUS(waitStatus);
  if (WIFSIGNALED(waitStatus)) return 128 + WTERMSIG(waitStatus);
  return -1;
}

std::vector<std::string> RunResult::outLines() const { return splitLines(out); }
std::vector<std::string> RunResult::errLines() const { return splitLines(err); }

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  std::vector<std::string> envStrings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const std::string& add : env) replaced = replaced || add.substr(0, add.find('=')) == name;
    if (!replaced) envStrings.push_back(entry);
  }
  envStrings.insert(envStrings.end(), env.begin(), env.end());
  std::vector<char*> argvC, envC;
  for (const std::string& a : argv) argvC.push_back(const_cast<char*>(a.c_str()));
  argvC.push_back(nullptr);
  for (const std::string& e : envStrings) envC.push_back(const_cast<char*>(e.c_str()));
  envC.push_back(nullptr);

  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return;
  start_ = nowSeconds();
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(argvC[0], argvC.data(), envC.data());
    _exit(126);
  }
  close(out[1]);
  close(err[1]);
  fds_[0] = out[0];
  fds_[1] = err[0];
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

bool ChildProcess::pump(int timeoutMs) {
  pollfd p[2];
  int n = 0;
  int which[2];
  for (int s = 0; s < 2; ++s) {
    if (fds_[s] >= 0) {
      p[n] = {fds_[s], POLLIN, 0};
      which[n++] = s;
    }
  }
  if (n == 0) return false;
  if (poll(p, n, timeoutMs) <= 0) return true;
  for (int i = 0; i < n; ++i) {
    if (p[i].revents == 0) continue;
    char buf[65536];
    ssize_t got = read(p[i].fd, buf, sizeof(buf));
    int s = which[i];
    if (got > 0) {
      (s == 0 ? result_.out : result_.err).append(buf, static_cast<size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      close(fds_[s]);
      fds_[s] = -1;
    }
  }
  return true;
}

bool ChildProcess::waitForOutput(const std::string& needle, double seconds) {
  double end = nowSeconds() + seconds;
  while (result_.out.find(needle) == std::string::npos) {
    if (nowSeconds() >= end || !pump(50)) return result_.out.find(needle) != std::string::npos;
  }
  return true;
}

void ChildProcess::signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

RunResult ChildProcess::finish(double seconds) {
  double end = nowSeconds() + seconds;
  while (pump(50)) {
    if (nowSeconds() >= end) break;
  }
  while (pid_ > 0) {
    pid_t r = waitpid(pid_, &result_.waitStatus, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      break;
    }
    if (nowSeconds() >= end) {
      result_.timedOut = true;
      kill(pid_, SIGKILL);
      waitpid(pid_, &result_.waitStatus, 0);
      pid_ = -1;
      break;
    }
    usleep(10000);
  }
  for (int i = 0; i < 20 && pump(10); ++i) {
  }
  result_.seconds = nowSeconds() - start_;
  return result_;
}

RunResult run(const std::vector<std::string>& argv, const std::vector<std::string>& env, double seconds) {
  ChildProcess child(argv, env);
  return child.finish(seconds);
}

}  // namespace tsr::tools::tsrun::testing
