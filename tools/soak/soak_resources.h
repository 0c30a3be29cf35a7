// What the soak watches on each rank: resident memory (VmRSS), open file descriptors, entries
// in /dev/shm, and mappings of shared memory (/dev/shm files, SysV segments). Reading them is
// I/O (readFigures); judging a phase's samples is pure (judgePhase).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tsr::tools::soak {

struct Figures {
  int64_t rssKiB = 0;       // /proc/self/status VmRSS
  int64_t rssAnonKiB = 0;   // its parts (reported only): RssAnon (heap, UCX's TCP buffers) and
  int64_t rssShmemKiB = 0;  // RssShmem (shared memory: segments, registered scratch)
  int64_t fds = 0;          // entries of /proc/self/fd
  int64_t shmEntries = 0;   // entries of /dev/shm that this job may have made (readFigures)
  int64_t shmMaps = 0;      // lines of /proc/self/maps naming /dev/shm/ or SYSV
  // Reported, not judged: the communicators' scratch pools (runtime/scratch_pool.h), idle
  // memory and blocks obtained so far, summed over the phase's communicators.
  int64_t poolIdleKiB = 0;
  int64_t poolBlocks = 0;
};

struct Sample {
  uint64_t at = 0;  // operations or cycles done when taken
  Figures figures;
};

// Reads this process's figures. /dev/shm is the machine's: counted are Tessera's segments
// (tsr-<pid>-...) but those of other live jobs (whose creator is neither this rank nor a
// sibling under its tsrun), and other entries (UCX's ucx_shm_posix_*) only while this rank or a
// sibling maps them; a segment of this job's left behind unmapped but named tsr- still counts.
// An entry can be there for a moment, so when it holds more than `shmNotAbove` entries it is
// read again (10 times over 1 s at most) and the smallest count kept; what stays is reported.
Figures readFigures(int64_t shmNotAbove);

// The entries of /dev/shm, sorted (for naming the ones a phase left behind).
std::vector<std::string> shmEntryNames();

struct PhaseVerdict {
  Sample before;                      // the first sample (before the phase)
  Sample start;                       // the first sample at or after warm-up
  Sample end;                         // the last sample
  Figures peak;                       // the largest of each figure from `start` on
  std::vector<std::string> failures;  // empty: flat within the bounds
};

// After warm-up (samples taken at `warmupEnd` or later) descriptors, /dev/shm entries and
// shared-memory mappings must not grow at all, and RSS by at most rssBoundKiB (judgeRss false:
// reported, not judged). The communicators' scratch pools are a cache that keeps up to
// ScratchPool::kMaxFreeBytes idle per communicator, each block a mapping of UCX-registered
// memory: what they hold is reported, and RSS and the mappings are judged without it (RSS less
// the pools' idle memory, mappings less the blocks the pools obtained). Failures name the
// rank, the phase, the figure and both values.
PhaseVerdict judgePhase(const std::string& phase, int rank, const std::vector<Sample>& samples, uint64_t warmupEnd,
                        int64_t rssBoundKiB, bool judgeRss);

}  // namespace tsr::tools::soak
