// JobRunner: starts every rank, relays their output, watches them and ends the job.
//
// One thread, one poll() loop over the ranks' stdout/stderr pipes and a signalfd that
// receives SIGCHLD, SIGINT, SIGTERM, SIGHUP and SIGQUIT (blocked for the whole process while
// it runs).
// Life of a job:
//   running  -> all ranks exit 0                        -> exit 0
//   running  -> first rank exits non-zero / by a signal -> print it, SIGTERM every rank's
//               process group, SIGKILL after the grace period -> exit with that rank's code
//               (a rank killed by a signal is blamed over one that exited non-zero up to
//               300 ms earlier: the killed one is the likelier root cause)
//   running  -> SIGINT/SIGTERM/SIGHUP/SIGQUIT to tsrun -> forward it, SIGKILL after the grace period
//               (a second signal: SIGKILL at once)      -> exit 128 + signal
//   running  -> --timeout expires -> stop as above       -> exit 124
//   --elastic: a rank that exits non-zero or dies is named and the others go on; when every
//               rank has ended -> the list of lost ranks -> exit with the first one's code
//   --respawn: as --elastic, and a failed rank is started again while respawns are left (a
//               replaced rank is not counted lost)
// Only the first of these events sets the exit code; ranks dying from tsrun's own signals
// afterwards are not reported as failures. After SIGKILL tsrun waits at most kReapSeconds
// more, so a job is gone within 0.3 s + grace + kReapSeconds of the first failure.
// A rank that has exited stays a zombie (seen with WNOWAIT, reaped when the job is over), so
// its process group id cannot be given to another process while tsrun may still signal the
// group to stop what the rank left running; a reaped rank's group is never signalled.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tools/tsrun/line_prefixer.h"
#include "tools/tsrun/rank_plan.h"
#include "tools/tsrun/rank_process.h"

namespace tsr::tools::tsrun {

struct RankLaunch {
  RankSlot slot;
  SpawnRequest request;
  std::optional<SpawnRequest> respawn;  // --respawn: how it is started again to join
};

struct JobSettings {
  double timeoutSeconds = 0;  // 0 = no limit
  double graceSeconds = 5;
  // A rank that fails is named, and the others go on (tsrun --elastic): the job ends when every
  // rank has ended, with the first failed rank's exit code and the list of lost ranks.
  bool elastic = false;
  // A failed rank is started again (its respawn request) up to this many times in all
  // (tsrun --respawn): a rank replaced so does not make the job fail.
  int respawns = 0;
};

class JobRunner {
 public:
  static constexpr double kReapSeconds = 3.0;   // after SIGKILL, before giving up
  static constexpr double kDrainSeconds = 1.0;  // after the last exit, for pipes held by others

  JobRunner(std::vector<RankLaunch> ranks, JobSettings settings);
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;
  ~JobRunner();

  // Runs the job to the end and returns tsrun's exit code.
  int run();

 private:
  using Clock = std::chrono::steady_clock;
  enum class Outcome { kNone, kRankFailed, kInterrupted, kTimedOut, kCannotStart };

  struct Rank {
    RankLaunch launch;
    pid_t pid = -1;
    bool running = false;      // started and not exited
    bool replacement = false;  // started by --respawn
    bool reaped = false;       // waited for: its pid may belong to another process now
    int fds[2] = {-1, -1};     // stdout, stderr read ends
    int inputFd = -1;          // its standard input's write end, held open while tsrun lives
    LinePrefixer prefixers[2];
    explicit Rank(RankLaunch l)
        : launch(std::move(l)), prefixers{LinePrefixer(launch.slot.rank), LinePrefixer(launch.slot.rank)} {}
  };

  struct Failure {
    Rank* rank;
    int status;
  };

  void startAll();
  // Starts one rank's process; false (reported, job stopping) when it cannot be.
  bool start(Rank& rank, const SpawnRequest& request);
  // --respawn: the failed rank's slot gets a new process, started to join.
  void respawn(const Rank& failed);
  // --respawn: stops the replacements still running --grace seconds after every other rank
  // ended (one that joined finishes its last step meanwhile; one that did not has nobody left
  // to let it in, and would wait for its bootstrap's timeout).
  void stopOrphans(Clock::time_point now);
  void loop();
  // Names the failed rank, sets the job's outcome and stops the others.
  void blame(const Failure& failure);
  // --elastic: names each failed rank and counts it lost; the others go on.
  void loseRanks(const std::vector<Failure>& failed);
  void onSignalFd();
  void reapChildren();
  void reapExited();
  void onInterrupt(int signal);
  // Reads what a pipe holds now (up to a few reads); closes it at end of file.
  void readStream(Rank& rank, int stream, int maxReads);
  void closeStream(Rank& rank, int stream);
  void emit(int stream, const std::string& text);
  void setOutcome(Outcome outcome, int exitCode);
  void stopAll(int signal);
  void signalAll(int signal);
  bool anyRunning() const;
  bool anyStreamOpen() const;
  void report(const std::string& message);

  std::vector<Rank> ranks_;
  JobSettings settings_;
  int signalFd_ = -1;
  bool outputBroken_[2] = {false, false};
  Outcome outcome_ = Outcome::kNone;
  int exitCode_ = 0;
  bool stopping_ = false;
  bool killed_ = false;
  int interrupts_ = 0;
  std::optional<Clock::time_point> jobDeadline_;
  std::optional<Clock::time_point> killDeadline_;
  std::optional<Clock::time_point> giveUpDeadline_;
  std::optional<Clock::time_point> drainDeadline_;
  // A rank that exited with an error, blamed at blameDeadline_ unless a rank killed by a
  // signal ends meanwhile (reapChildren).
  std::optional<Failure> pendingBlame_;
  std::optional<Clock::time_point> blameDeadline_;
  // --elastic: the ranks lost so far ("2 (host tsr2)"), and the first one's exit code.
  std::vector<std::string> lost_;
  int lostExitCode_ = 0;
  int respawnsLeft_ = 0;
  std::vector<std::string> replaced_;
  // Every rank but replacements has ended since then; once stopped, the replacements' ends
  // count as no loss (the job's work was done without them).
  std::optional<Clock::time_point> orphanDeadline_;
  bool orphansStopped_ = false;
};

}  // namespace tsr::tools::tsrun
