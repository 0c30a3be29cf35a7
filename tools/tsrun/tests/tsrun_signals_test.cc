// The real tsrun binary and signals: SIGHUP (the terminal closed) and SIGQUIT are forwarded
// like SIGTERM, and the process group of a rank that has ended keeps its number while tsrun may
// still signal it.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "tools/tsrun/tests/e2e_support.h"

namespace tsr::tools::tsrun {
namespace {

using namespace testing;

// SIGHUP (the terminal closed) and SIGQUIT used to kill tsrun and leave the ranks running.
TEST(TsrunSignals, HangUpAndQuitAreForwardedToTheRanks) {
  for (int sig : {SIGHUP, SIGQUIT}) {
    TempDir dir;
    std::string name = sig == SIGHUP ? "HUP" : "QUIT";
    ChildProcess child(tsrun({"-np", "2", "/bin/sh", "-c",
                              "ulimit -c 0; trap 'echo got-" + name + "; exit 9' " + name + "; echo $$ > " +
                                  dir.path() + "/pid.$TSR_RANK; echo up; sleep 30 & wait"}));
    ASSERT_TRUE(child.waitForOutput("[0] up", 10));
    ASSERT_TRUE(child.waitForOutput("[1] up", 10));
    child.signal(sig);
    RunResult r = child.finish(20);
    EXPECT_EQ(r.exitCode(), 128 + sig) << describe(r);
    EXPECT_TRUE(contains(r.err, "got SIG" + name + "; forwarding it to all ranks")) << describe(r);
    EXPECT_TRUE(contains(r.out, "[0] got-" + name) && contains(r.out, "[1] got-" + name)) << describe(r);
    for (const char* rank : {"0", "1"}) {
      pid_t pid = 0;
      std::ifstream(dir.path() + "/pid." + rank) >> pid;
      ASSERT_GT(pid, 0);
      EXPECT_NE(kill(pid, 0), 0) << "rank " << rank << " (pid " << pid << ") outlived tsrun";
    }
  }
}

// A rank that has ended is not reaped while the job runs: as a zombie it keeps its pid, so the
// process group tsrun signals when it stops the job can be no one else's.
TEST(TsrunSignals, EndedRankKeepsItsPidUntilTheJobIsOver) {
  TempDir dir;
  std::string pidFile = dir.path() + "/pid.0";
  ChildProcess child(tsrun({"-np", "2", "/bin/sh", "-c",
                            "if [ $TSR_RANK = 0 ]; then echo $$ > " + pidFile + "; exit 0; fi; echo up; sleep 30"}));
  ASSERT_TRUE(child.waitForOutput("[1] up", 10));
  std::string state;
  for (int i = 0; i < 100 && state != "Z"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pid_t pid = 0;
    std::ifstream(pidFile) >> pid;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pidField, comm;
    state = "gone";
    if (pid > 0 && stat >> pidField >> comm >> state) continue;
  }
  EXPECT_EQ(state, "Z") << "rank 0 was reaped while the job ran";
  child.signal(SIGTERM);
  RunResult r = child.finish(20);
  EXPECT_EQ(r.exitCode(), 128 + SIGTERM) << describe(r);
}

}  // namespace
}  // namespace tsr::tools::tsrun
