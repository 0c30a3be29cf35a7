// LinePrefixer and exit-status wording: the pure halves of tsrun's output handling.
#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include "tools/tsrun/exit_status.h"
#include "tools/tsrun/line_prefixer.h"

namespace tsr::tools::tsrun {
namespace {

TEST(LinePrefixer, ReleasesOnlyWholeLines) {
  LinePrefixer p(3);
  EXPECT_EQ(p.feed("hel"), "");
  EXPECT_TRUE(p.hasPending());
  EXPECT_EQ(p.feed("lo\nwor"), "[3] hello\n");
  EXPECT_EQ(p.feed("ld\n\nnext\nta"), "[3] world\n[3] \n[3] next\n");
  EXPECT_EQ(p.finish(), "[3] ta\n");
  EXPECT_EQ(p.finish(), "");
  EXPECT_FALSE(p.hasPending());
}

TEST(LinePrefixer, EmptyAndExactInput) {
  LinePrefixer p(12);
  EXPECT_EQ(p.feed(""), "");
  EXPECT_EQ(p.feed("x\n"), "[12] x\n");
  EXPECT_EQ(p.finish(), "");
}

TEST(LinePrefixer, VeryLongLineIsCut) {
  LinePrefixer p(0);
  std::string big(LinePrefixer::kMaxLine + 10, 'a');
  std::string out = p.feed(big);
  EXPECT_EQ(out, "[0] " + std::string(LinePrefixer::kMaxLine, 'a') + "\n");
  EXPECT_EQ(p.feed("b\n"), "[0] " + std::string(10, 'a') + "b\n");
}

int exited(int code) { return (code & 0xff) << 8; }
int signaled(int sig) { return sig & 0x7f; }

TEST(ExitStatus, Wording) {
  ASSERT_TRUE(WIFEXITED(exited(3)));
  ASSERT_TRUE(WIFSIGNALED(signaled(SIGKILL)));
  EXPECT_FALSE(isFailure(exited(0)));
  EXPECT_TRUE(isFailure(exited(3)));
  EXPECT_TRUE(isFailure(signaled(SIGKILL)));
  EXPECT_EQ(exitCodeOf(exited(3)), 3);
  EXPECT_EQ(exitCodeOf(signaled(SIGKILL)), 137);
  EXPECT_EQ(exitCodeOf(signaled(SIGTERM)), 143);
  EXPECT_EQ(describeExit(1, "node1", exited(3)), "rank 1 (host node1) exited with status 3");
  EXPECT_EQ(describeExit(0, "localhost", signaled(SIGKILL)), "rank 0 (host localhost) killed by signal SIGKILL");
  EXPECT_EQ(signalName(SIGINT), "SIGINT");
  EXPECT_EQ(signalName(SIGSEGV), "SIGSEGV");
}

// A remote rank's signal arrives as its rsh shell's exit status 128 + N: named as the signal,
// the status kept (it is what tsrun exits with); a local rank's 137 is just a status.
TEST(ExitStatus, RemoteShellStatusNamesTheSignal) {
  EXPECT_EQ(remoteSignalOf(exited(137), true), SIGKILL);
  EXPECT_EQ(remoteSignalOf(exited(137), false), 0);
  EXPECT_EQ(remoteSignalOf(exited(3), true), 0);
  EXPECT_EQ(remoteSignalOf(exited(255), true), 0);  // ssh's own failure, not a signal
  EXPECT_EQ(remoteSignalOf(signaled(SIGKILL), true), 0);
  EXPECT_EQ(describeExit(2, "tsr2", exited(137), true),
            "rank 2 (host tsr2) exited with status 137 (killed by SIGKILL on its host, as the remote shell reports)");
  EXPECT_EQ(describeExit(2, "tsr2", exited(137), false), "rank 2 (host tsr2) exited with status 137");
  EXPECT_EQ(describeExit(2, "tsr2", exited(3), true), "rank 2 (host tsr2) exited with status 3");
  EXPECT_EQ(exitCodeOf(exited(137)), 137);
}

}  // namespace
}  // namespace tsr::tools::tsrun
