#include "tools/tsrun/job_runner.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tools/tsrun/exit_status.h"

namespace tsr::tools::tsrun {
namespace {

// How long a rank that exited with an error waits to be blamed, in case a rank killed by a
// signal (the likelier root cause) is reaped after it.
constexpr auto kBlameGrace = std::chrono::milliseconds(300);

sigset_t handledSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGQUIT);
  return set;
}

// The wait status (as waitpid gives it) of a child that waitid saw end.
int waitStatusOf(const siginfo_t& info) {
  if (info.si_code == CLD_EXITED) return (info.si_status & 0xff) << 8;
  return (info.si_status & 0x7f) | (info.si_code == CLD_DUMPED ? 0x80 : 0);
}

std::string formatSeconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", seconds);
  return buf;
}

auto toDuration(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

JobRunner::JobRunner(std::vector<RankLaunch> ranks, JobSettings settings)
    : settings_(settings), respawnsLeft_(settings.respawns) {
  // Room for every respawn: Failure and the loop hold pointers into ranks_.
  ranks_.reserve(ranks.size() + static_cast<size_t>(std::max(0, settings.respawns)));
  for (RankLaunch& r : ranks) ranks_.emplace_back(std::move(r));
}

JobRunner::~JobRunner() {
  for (Rank& rank : ranks_) {
    for (int s = 0; s < 2; ++s) closeStream(rank, s);
    if (rank.inputFd >= 0) close(rank.inputFd);
  }
  if (signalFd_ >= 0) close(signalFd_);
}

int JobRunner::run() {
  sigset_t set = handledSignals();
  sigset_t previous;
  sigprocmask(SIG_BLOCK, &set, &previous);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction previousPipe {};
  sigaction(SIGPIPE, &ignore, &previousPipe);
  signalFd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signalFd_ < 0) {
    report(std::string("signalfd: ") + std::strerror(errno));
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    return 1;
  }
  if (settings_.timeoutSeconds > 0) {
    jobDeadline_ = Clock::now() + toDuration(settings_.timeoutSeconds);
  }
  startAll();
  loop();
  if (stopping_) signalAll(SIGKILL);  // leftovers of stopped ranks' process groups
  reapExited();
  for (int s = 0; s < 2; ++s) {
    for (Rank& rank : ranks_) {
      emit(s, rank.prefixers[s].finish());
      closeStream(rank, s);
    }
  }
  sigaction(SIGPIPE, &previousPipe, nullptr);
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  if (!replaced_.empty()) {
    std::string list;
    for (const std::string& rank : replaced_) list += (list.empty() ? "" : ", ") + rank;
    report("--respawn: " + std::to_string(replaced_.size()) + " failed rank(s) started again: " + list);
  }
  if (!lost_.empty()) {
    std::string list;
    for (const std::string& rank : lost_) list += (list.empty() ? "" : ", ") + rank;
    report("--elastic: " + std::to_string(lost_.size()) + " of " + std::to_string(ranks_.size() - replaced_.size()) +
           " ranks lost: " + list);
    if (outcome_ == Outcome::kNone) return lostExitCode_;
  }
  return exitCode_;
}

void JobRunner::startAll() {
  for (Rank& rank : ranks_) {
    if (stopping_) break;  // e.g. SIGINT arrived while starting: start no more ranks
    if (!start(rank, rank.launch.request)) break;
    onSignalFd();  // a signal that came while spawning is handled before the next spawn
  }
}

bool JobRunner::start(Rank& rank, const SpawnRequest& request) {
  Result<SpawnedProcess> spawned = spawnRank(request);
  if (!spawned.isOk()) {
    report("cannot start rank " + std::to_string(rank.launch.slot.rank) + " (host " + rank.launch.slot.host +
           "): " + spawned.status().message());
    setOutcome(Outcome::kCannotStart,
               spawned.status().code() == Code::kNotSupported ? kExitNotExecutable : kExitCannotStart);
    stopAll(SIGTERM);
    return false;
  }
  rank.pid = spawned.value().pid;
  rank.running = true;
  rank.fds[0] = spawned.value().outFd;
  rank.fds[1] = spawned.value().errFd;
  rank.inputFd = spawned.value().inFd;
  return true;
}

void JobRunner::respawn(const Rank& failed) {
  --respawnsLeft_;
  ranks_.emplace_back(failed.launch);
  Rank& fresh = ranks_.back();
  fresh.replacement = true;
  const RankSlot& slot = fresh.launch.slot;
  replaced_.push_back(std::to_string(slot.rank) + " (host " + slot.host + ")");
  report("--respawn: starting rank " + std::to_string(slot.rank) + " again to join the others (" +
         std::to_string(respawnsLeft_) + " respawns left)");
  start(fresh, *fresh.launch.respawn);
}

void JobRunner::stopOrphans(Clock::time_point now) {
  const bool members =
      std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running && !r.replacement; });
  const bool orphans =
      std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running && r.replacement; });
  if (members || !orphans) {
    orphanDeadline_.reset();
    return;
  }
  if (!orphanDeadline_) {
    orphanDeadline_ = now + toDuration(settings_.graceSeconds);
    return;
  }
  if (now < *orphanDeadline_) return;
  report(
      "--respawn: every other rank has ended; stopping the replacements still running (nobody is left to let "
      "them in)");
  orphansStopped_ = true;
  stopAll(SIGTERM);
}

void JobRunner::loop() {
  std::vector<pollfd> fds;
  std::vector<std::pair<Rank*, int>> owners;
  while (true) {
    Clock::time_point now = Clock::now();
    if (pendingBlame_ && outcome_ == Outcome::kNone && (now >= *blameDeadline_ || !anyRunning())) blame(*pendingBlame_);
    if (settings_.respawns > 0 && outcome_ == Outcome::kNone && !stopping_) stopOrphans(now);
    if (jobDeadline_ && now >= *jobDeadline_ && outcome_ == Outcome::kNone) {
      report("the job ran longer than --timeout " + formatSeconds(settings_.timeoutSeconds) + " s; stopping it");
      setOutcome(Outcome::kTimedOut, kExitTimeout);
      stopAll(SIGTERM);
    }
    if (killDeadline_ && now >= *killDeadline_ && !killed_) {
      signalAll(SIGKILL);
      killed_ = true;
      giveUpDeadline_ = now + toDuration(kReapSeconds);
    }
    if (!anyRunning()) {
      if (!drainDeadline_) drainDeadline_ = now + toDuration(kDrainSeconds);
      if (!anyStreamOpen() || now >= *drainDeadline_) return;
    } else if (giveUpDeadline_ && now >= *giveUpDeadline_) {
      for (const Rank& rank : ranks_) {
        if (rank.running) {
          report("rank " + std::to_string(rank.launch.slot.rank) + " (pid " + std::to_string(rank.pid) +
                 ") did not exit after SIGKILL; giving up on it");
        }
      }
      return;
    }

    std::optional<Clock::time_point> wake;
    auto consider = [&](const std::optional<Clock::time_point>& d) {
      if (d && (!wake || *d < *wake)) wake = d;
    };
    if (outcome_ == Outcome::kNone) consider(jobDeadline_);
    if (outcome_ == Outcome::kNone) consider(blameDeadline_);
    if (!stopping_) consider(orphanDeadline_);
    if (!killed_) consider(killDeadline_);
    consider(giveUpDeadline_);
    consider(drainDeadline_);
    int timeoutMs = -1;
    if (wake) {
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(*wake - now).count();
      timeoutMs = static_cast<int>(std::clamp<long long>(ms, 0, 60'000));
    }

    fds.clear();
    owners.clear();
    fds.push_back({signalFd_, POLLIN, 0});
    owners.emplace_back(nullptr, -1);
    for (Rank& rank : ranks_) {
      for (int s = 0; s < 2; ++s) {
        if (rank.fds[s] >= 0) {
          fds.push_back({rank.fds[s], POLLIN, 0});
          owners.emplace_back(&rank, s);
        }
      }
    }
    int ready = poll(fds.data(), fds.size(), timeoutMs);
    if (ready < 0 && errno != EINTR) {
      report(std::string("poll: ") + std::strerror(errno));
      stopAll(SIGKILL);
      return;
    }
    if (ready <= 0) continue;
    // Output first, so a failed rank's last lines come before the report of its failure.
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) readStream(*owners[i].first, owners[i].second, 1);
    }
    if (fds[0].revents != 0) onSignalFd();
  }
}

void JobRunner::onSignalFd() {
  signalfd_siginfo info;
  bool child = false;
  while (read(signalFd_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
    if (info.ssi_signo == SIGCHLD) {
      child = true;
    } else {
      onInterrupt(static_cast<int>(info.ssi_signo));
    }
  }
  if (child) reapChildren();
}

void JobRunner::reapChildren() {
  // Collect every rank that ended since the last pass before blaming one: when a rank dies, its
  // peers fail within milliseconds, and on a busy machine both exits are often reaped in one
  // pass, in pid order. A rank killed by a signal is then the root cause, not the peer that
  // exited with an error because of it. A killed process may even be reaped after such a peer
  // (its exit unmaps a large address space first: seen under ASan), so a rank that exited with
  // an error is blamed only after kBlameGrace, unless a killed one turns up meanwhile.
  std::vector<Failure> failed;
  for (Rank& rank : ranks_) {
    if (!rank.running) continue;
    siginfo_t info{};
    // WNOWAIT: the rank stays a zombie, holding its pid and process group id (job_runner.h).
    if (waitid(P_PID, static_cast<id_t>(rank.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != rank.pid)
      continue;
    rank.running = false;
    int status = waitStatusOf(info);
    for (int s = 0; s < 2; ++s) readStream(rank, s, 16);
    if (isFailure(status)) failed.push_back({&rank, status});
  }
  if (settings_.elastic && outcome_ == Outcome::kNone) return loseRanks(failed);
  if (failed.empty() || outcome_ != Outcome::kNone) return;
  auto killed = std::find_if(failed.begin(), failed.end(), [](const Failure& f) {
    return WIFSIGNALED(f.status) || remoteSignalOf(f.status, !f.rank->launch.slot.local);
  });
  if (killed != failed.end()) return blame(*killed);
  if (!pendingBlame_) {
    pendingBlame_ = failed.front();
    blameDeadline_ = Clock::now() + kBlameGrace;
  }
}

void JobRunner::loseRanks(const std::vector<Failure>& failed) {
  for (const Failure& f : failed) {
    const RankSlot& slot = f.rank->launch.slot;
    if (orphansStopped_ && f.rank->replacement) {
      report("the replacement of rank " + std::to_string(slot.rank) + " (host " + slot.host +
             ") stopped: the others had ended");
      continue;
    }
    report(describeExit(slot.rank, slot.host, f.status, !slot.local) + "; --elastic: the other ranks go on");
    if (respawnsLeft_ > 0 && f.rank->launch.respawn && !stopping_) {
      respawn(*f.rank);
      continue;
    }
    if (lost_.empty()) lostExitCode_ = exitCodeOf(f.status);
    lost_.push_back(std::to_string(slot.rank) + " (host " + slot.host + ")");
  }
}

void JobRunner::blame(const Failure& failure) {
  pendingBlame_.reset();
  blameDeadline_.reset();
  const RankSlot& slot = failure.rank->launch.slot;
  report(describeExit(slot.rank, slot.host, failure.status, !slot.local));
  setOutcome(Outcome::kRankFailed, exitCodeOf(failure.status));
  stopAll(SIGTERM);
}

void JobRunner::onInterrupt(int signal) {
  ++interrupts_;
  if (interrupts_ > 1) {
    report("got " + signalName(signal) + " again; killing all ranks");
    signalAll(SIGKILL);
    killed_ = true;
    giveUpDeadline_ = Clock::now() + toDuration(kReapSeconds);
    return;
  }
  report("got " + signalName(signal) + "; forwarding it to all ranks");
  setOutcome(Outcome::kInterrupted, 128 + signal);
  stopAll(signal);
}

void JobRunner::setOutcome(Outcome outcome, int exitCode) {
  if (outcome_ != Outcome::kNone) return;
  outcome_ = outcome;
  exitCode_ = exitCode;
}

void JobRunner::stopAll(int signal) {
  signalAll(signal);
  if (!stopping_) {
    stopping_ = true;
    killDeadline_ = Clock::now() + toDuration(settings_.graceSeconds);
  }
}

void JobRunner::signalAll(int signal) {
  // Exited ranks too, while they are zombies: their process group may still hold children.
  for (const Rank& rank : ranks_) {
    if (rank.pid > 0 && !rank.reaped) killpg(rank.pid, signal);
  }
}

void JobRunner::reapExited() {
  for (Rank& rank : ranks_) {
    if (rank.pid <= 0 || rank.running || rank.reaped) continue;
    int status = 0;
    while (waitpid(rank.pid, &status, 0) < 0 && errno == EINTR) {
    }
    rank.reaped = true;
  }
}

bool JobRunner::anyRunning() const {
  return std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running; });
}

}  // namespace tsr::tools::tsrun
