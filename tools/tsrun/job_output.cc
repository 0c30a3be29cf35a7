// JobRunner's output side: the ranks' stdout and stderr, read as they come and written out
// line by line with each line's rank prefix (line_prefixer.h), and tsrun's own reports.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "tools/tsrun/job_runner.h"

namespace tsr::tools::tsrun {
namespace {

constexpr size_t kReadChunk = 64 * 1024;

// Writes everything, waiting when fd is non-blocking and full. False when the reader is gone.
bool writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      poll(&p, 1, 100);
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

void JobRunner::readStream(Rank& rank, int stream, int maxReads) {
  char buf[kReadChunk];
  for (int i = 0; i < maxReads && rank.fds[stream] >= 0; ++i) {
    ssize_t n = read(rank.fds[stream], buf, sizeof(buf));
    if (n > 0) {
      emit(stream, rank.prefixers[stream].feed(std::string_view(buf, static_cast<size_t>(n))));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    emit(stream, rank.prefixers[stream].finish());  // end of file or read error
    closeStream(rank, stream);
  }
}

void JobRunner::closeStream(Rank& rank, int stream) {
  if (rank.fds[stream] >= 0) {
    close(rank.fds[stream]);
    rank.fds[stream] = -1;
  }
}

void JobRunner::emit(int stream, const std::string& text) {
  if (text.empty() || outputBroken_[stream]) return;
  int fd = stream == 0 ? STDOUT_FILENO : STDERR_FILENO;
  if (!writeAll(fd, text.data(), text.size())) outputBroken_[stream] = true;
}

bool JobRunner::anyStreamOpen() const {
  return std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.fds[0] >= 0 || r.fds[1] >= 0; });
}

void JobRunner::report(const std::string& message) {
  std::string line = "tsrun: " + message + "\n";
  writeAll(STDERR_FILENO, line.data(), line.size());
}

}  // namespace tsr::tools::tsrun
