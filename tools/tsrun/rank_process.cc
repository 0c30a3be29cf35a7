#include "tools/tsrun/rank_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "tools/tsrun/launch_command.h"

namespace tsr::tools::tsrun {
namespace {

// Closes what it holds unless released.
struct PipePair {
  int fds[2] = {-1, -1};
  ~PipePair() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
};

std::vector<char*> cStrings(const std::vector<std::string>& words) {
  std::vector<char*> out;
  out.reserve(words.size() + 1);
  for (const std::string& w : words) out.push_back(const_cast<char*>(w.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

Result<SpawnedProcess> spawnRank(const SpawnRequest& request) {
  if (request.argv.empty()) return Status(Code::kInvalidArgument, "spawnRank: empty argv");
  PipePair out;
  PipePair err;
  if (pipe2(out.fds, O_CLOEXEC) != 0 || pipe2(err.fds, O_CLOEXEC) != 0) {
    return Status(Code::kInternal, std::string("pipe2: ") + std::strerror(errno));
  }

  // The input fits a pipe's buffer (a secret, a line), so it is written whole before the
  // spawn; the write end stays open for the life of the rank (rank_process.h).
  PipePair in;
  if (request.input.size() > PIPE_BUF) return Status(Code::kInternal, "spawnRank: input larger than PIPE_BUF");
  if (pipe2(in.fds, O_CLOEXEC) != 0 ||
      write(in.fds[1], request.input.data(), request.input.size()) != static_cast<ssize_t>(request.input.size()))
    return Status(Code::kInternal, std::string("stdin pipe: ") + std::strerror(errno));

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.fds[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out.fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.fds[1], STDERR_FILENO);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty;
  sigemptyset(&empty);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE, SIGHUP, SIGQUIT}) sigaddset(&defaults, sig);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  std::vector<char*> argv = cStrings(request.argv);
  std::vector<char*> envp = cStrings(request.env);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    // Found but not runnable (a directory, no execute permission) is told apart, as a shell's 126.
    const Code code = rc == EACCES || rc == ENOEXEC ? Code::kNotSupported : Code::kInvalidArgument;
    return Status(code, request.argv[0] + ": " + std::strerror(rc));
  }

  SpawnedProcess process;
  process.pid = pid;
  process.outFd = out.fds[0];
  process.errFd = err.fds[0];
  process.inFd = in.fds[1];
  out.fds[0] = -1;
  err.fds[0] = -1;
  in.fds[1] = -1;
  for (int fd : {process.outFd, process.errFd}) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return process;
}

std::string displayCommand(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& word : argv) {
    if (!out.empty()) out += ' ';
    out += shellQuote(word);
  }
  return out;
}

}  // namespace tsr::tools::tsrun
