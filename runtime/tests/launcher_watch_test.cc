// What the launcher watch reads from standard input's poll() state, on the two kinds of
// standard input a rank gets: tsrun's pipe (local ranks, and remote ones through netcluster-like
// agents) and a socket (ssh's channel may be one), before and after the launcher's end goes.
#include "runtime/launcher_watch.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace tsr::runtime {
namespace {

short revents(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  EXPECT_GE(poll(&p, 1, 0), 0);
  return p.revents;
}

TEST(LauncherWatch, APipeEndsWhenItsWriterCloses) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_EQ(launcherPipeState(revents(fds[0])), LauncherPipe::kOpen);
  ASSERT_EQ(write(fds[1], "x", 1), 1);  // unread data is not an end
  EXPECT_EQ(launcherPipeState(revents(fds[0])), LauncherPipe::kOpen);
  close(fds[1]);
  EXPECT_EQ(launcherPipeState(revents(fds[0])), LauncherPipe::kEnded);
  close(fds[0]);
}

TEST(LauncherWatch, ASocketEndsWhenThePeerShutsDownItsSide) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  EXPECT_EQ(launcherPipeState(revents(fds[0])), LauncherPipe::kOpen);
  shutdown(fds[1], SHUT_WR);  // ssh passes the end of its input on like this
  EXPECT_EQ(launcherPipeState(revents(fds[0])), LauncherPipe::kEnded);
  close(fds[0]);
  close(fds[1]);
}

TEST(LauncherWatch, AClosedDescriptorIsNotWatched) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  close(fds[0]);
  close(fds[1]);
  EXPECT_EQ(launcherPipeState(revents(fds[0])), LauncherPipe::kNotAPipe);
}

}  // namespace
}  // namespace tsr::runtime
