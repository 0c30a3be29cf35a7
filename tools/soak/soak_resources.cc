#include "tools/soak/soak_resources.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

namespace tsr::tools::soak {

namespace {

void readRss(Figures& f) {
  f.rssKiB = f.rssAnonKiB = f.rssShmemKiB = -1;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) f.rssKiB = std::atoll(line.c_str() + 6);
    if (line.rfind("RssAnon:", 0) == 0) f.rssAnonKiB = std::atoll(line.c_str() + 8);
    if (line.rfind("RssShmem:", 0) == 0) f.rssShmemKiB = std::atoll(line.c_str() + 9);
  }
}

// The parent of process `pid` (0 when it is gone or unreadable).
long parentOf(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');  // the command name may hold spaces and parentheses
  long ppid = 0;
  if (close != std::string::npos) std::sscanf(text.c_str() + close + 1, " %*c %ld", &ppid);
  return ppid;
}

// A Tessera segment (tsr-<creator pid>-...) of another live process than this job's ranks
// (this process and its siblings under the same tsrun): another job's, not this one's to count.
bool anotherJobsSegment(const std::string& name) {
  long pid = 0;
  if (std::sscanf(name.c_str(), "tsr-%ld-", &pid) != 1 || pid <= 0 || pid == getpid()) return false;
  const long parent = parentOf(pid);
  return parent != 0 && parent != getppid();
}

// The /dev/shm files that process `pid` ("self" or a number) maps.
void addShmMaps(const std::string& pid, std::set<std::string>& names) {
  std::ifstream maps("/proc/" + pid + "/maps");
  for (std::string line; std::getline(maps, line);) {
    const size_t at = line.find("/dev/shm/");
    if (at == std::string::npos) continue;
    std::string name = line.substr(at + 9);
    names.insert(name.substr(0, name.find(" (deleted)")));
  }
}

// The /dev/shm files mapped by this job: this process and its siblings (the ranks under the
// same tsrun).
std::set<std::string> shmMappedByThisJob() {
  std::set<std::string> names;
  addShmMaps("self", names);
  const long parent = getppid(), self = getpid();
  if (DIR* proc = opendir("/proc")) {
    while (dirent* e = readdir(proc)) {
      if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
      const long pid = std::atol(e->d_name);
      if (pid != self && parentOf(pid) == parent) addShmMaps(e->d_name, names);
    }
    closedir(proc);
  }
  return names;
}

// Entries of a directory, without . and ..; -1 when it cannot be read. In /dev/shm, only what
// this job may have made (tests run side by side on one machine, and other programs' entries,
// UCX's segments of another job among them, come and go): Tessera's segments but those of
// other live jobs, and any other entry only while one of this job's processes maps it.
int64_t countEntries(const char* path, std::vector<std::string>* names = nullptr) {
  DIR* dir = opendir(path);
  if (!dir) return -1;
  const bool shm = std::string(path) == "/dev/shm";
  const std::set<std::string> mapped = shm ? shmMappedByThisJob() : std::set<std::string>();
  int64_t n = 0;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (shm && anotherJobsSegment(name)) continue;
    if (shm && name.rfind("tsr-", 0) != 0 && !mapped.count(name)) continue;
    ++n;
    if (names) names->push_back(name);
  }
  closedir(dir);
  return n;
}

int64_t openFds() {
  int64_t n = countEntries("/proc/self/fd");
  return n < 0 ? n : n - 1;  // the directory's own descriptor
}

int64_t shmMaps() {
  std::ifstream maps("/proc/self/maps");
  int64_t n = 0;
  for (std::string line; std::getline(maps, line);)
    n += line.find("/dev/shm/") != std::string::npos || line.find("SYSV") != std::string::npos;
  return n;
}

}  // namespace

Figures readFigures(int64_t shmNotAbove) {
  Figures f;
  readRss(f);
  f.fds = openFds();
  f.shmMaps = shmMaps();
  f.shmEntries = countEntries("/dev/shm");
  for (int i = 0; i < 10 && f.shmEntries > shmNotAbove; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    f.shmEntries = std::min(f.shmEntries, countEntries("/dev/shm"));
  }
  return f;
}

std::vector<std::string> shmEntryNames() {
  std::vector<std::string> names;
  countEntries("/dev/shm", &names);
  std::sort(names.begin(), names.end());
  return names;
}

PhaseVerdict judgePhase(const std::string& phase, int rank, const std::vector<Sample>& samples, uint64_t warmupEnd,
                        int64_t rssBoundKiB, bool judgeRss) {
  PhaseVerdict v;
  if (samples.empty()) {
    v.failures.push_back("rank " + std::to_string(rank) + ", " + phase + ": no figures were taken");
    return v;
  }
  v.before = samples.front();
  v.end = samples.back();
  auto start = std::find_if(samples.begin(), samples.end(), [&](const Sample& s) { return s.at >= warmupEnd; });
  v.start = start == samples.end() ? samples.back() : *start;
  v.peak = v.start.figures;
  for (auto it = start; it != samples.end(); ++it) {
    v.peak.rssKiB = std::max(v.peak.rssKiB, it->figures.rssKiB);
    v.peak.fds = std::max(v.peak.fds, it->figures.fds);
    v.peak.shmEntries = std::max(v.peak.shmEntries, it->figures.shmEntries);
    v.peak.shmMaps = std::max(v.peak.shmMaps, it->figures.shmMaps);
  }
  const Figures& a = v.start.figures;
  const Figures& b = v.end.figures;
  std::string where = "rank " + std::to_string(rank) + ", " + phase + ": ";
  std::string span = " after warm-up (from " + std::to_string(v.start.at) + " to " + std::to_string(v.end.at) + ")";
  auto flat = [&](const char* what, int64_t from, int64_t to) {
    if (from < 0 || to < 0)
      v.failures.push_back(where + what + " could not be read");
    else if (to > from)
      v.failures.push_back(where + what + " grew from " + std::to_string(from) + " to " + std::to_string(to) + span +
                           "; bound: no growth");
  };
  flat("open file descriptors", a.fds, b.fds);
  flat("/dev/shm entries", a.shmEntries, b.shmEntries);
  if (a.shmMaps < 0 || b.shmMaps < 0)
    flat("shared-memory mappings", a.shmMaps, b.shmMaps);
  else if (b.shmMaps - b.poolBlocks > a.shmMaps - a.poolBlocks)
    v.failures.push_back(where + "shared-memory mappings grew from " + std::to_string(a.shmMaps) + " to " +
                         std::to_string(b.shmMaps) + " while the scratch pools obtained " +
                         std::to_string(b.poolBlocks - a.poolBlocks) + " blocks" + span + "; bound: no growth");
  if (a.rssKiB < 0 || b.rssKiB < 0) {
    v.failures.push_back(where + "VmRSS could not be read");
  } else if (judgeRss && (b.rssKiB - b.poolIdleKiB) - (a.rssKiB - a.poolIdleKiB) > rssBoundKiB) {
    char text[300];
    std::snprintf(text, sizeof text,
                  "RSS less the scratch pools' idle memory grew from %.1f MiB to %.1f MiB (+%.1f MiB; RSS %.1f -> "
                  "%.1f MiB, pools %.1f -> %.1f MiB)",
                  (a.rssKiB - a.poolIdleKiB) / 1024.0, (b.rssKiB - b.poolIdleKiB) / 1024.0,
                  ((b.rssKiB - b.poolIdleKiB) - (a.rssKiB - a.poolIdleKiB)) / 1024.0, a.rssKiB / 1024.0,
                  b.rssKiB / 1024.0, a.poolIdleKiB / 1024.0, b.poolIdleKiB / 1024.0);
    char bound[64];
    std::snprintf(bound, sizeof bound, "; bound: +%.1f MiB", rssBoundKiB / 1024.0);
    v.failures.push_back(where + text + span + bound);
  }
  return v;
}

}  // namespace tsr::tools::soak
