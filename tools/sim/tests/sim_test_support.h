// Test support for tsr-sim: SimGrid allows one engine per process, so each replay runs in a
// forked child that sends back its figures; small job and platform builders.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "tools/sim/replay.h"
#include "tools/sim/sim_job.h"

namespace tsr::sim {

struct Figures {
  bool ok = false;
  double seconds = 0, computeSeconds = 0;
  uint64_t payloadBytes = 0, headerBytes = 0, messages = 0;
  char error[256] = {};
};

inline Figures replayInChild(const JobPlans& plans, const PlatformSpec& platform, const ReplayOptions& options,
                             int ranksPerHost) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Figures f;
    auto r = replay(plans, platform, options, ranksPerHost);
    if (r.isOk()) {
      f = {true,
           r.value().seconds,
           r.value().computeSeconds,
           r.value().payloadBytes,
           r.value().headerBytes,
           r.value().messages,
           {}};
    } else {
      std::strncpy(f.error, r.status().message().c_str(), sizeof f.error - 1);
    }
    ssize_t w = write(fds[1], &f, sizeof f);
    _exit(w == static_cast<ssize_t>(sizeof f) ? 0 : 1);
  }
  close(fds[1]);
  Figures f;
  size_t got = 0;
  while (got < sizeof f) {
    ssize_t n = read(fds[0], reinterpret_cast<char*>(&f) + got, sizeof f - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != sizeof f) std::snprintf(f.error, sizeof f.error, "child died (status %d)", status);
  return f;
}

inline SimJob ringJob(int ranks, size_t bytes) {
  SimJob job;
  job.ranks = ranks;
  job.algorithm = "ring";
  job.bytes = bytes;
  return job;
}

inline PlatformSpec oneSwitch(double rate, double latency) {
  PlatformSpec p;
  p.rate = rate;
  p.latency = latency;
  return p;
}

inline ReplayOptions freeCompute() {
  ReplayOptions o;
  o.reduceRate = 0;
  o.copyRate = 0;
  o.selectRate = 0;
  o.passRate = 0;
  return o;
}

}  // namespace tsr::sim
