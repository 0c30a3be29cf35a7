// Where the running executable lies. The tests find the build's other executables (tsrun,
// fault_worker, tsr-bench: all in the build's bin/) and their data beside their own binary,
// rather than through an absolute build path compiled in, which would make each clone's
// compile of them a ccache miss.
#pragma once

#include <unistd.h>

#include <climits>
#include <string>

namespace tsr {

// The directory of /proc/self/exe, or "." if it cannot be read.
inline std::string selfDirectory() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) {
    return ".";
  }
  std::string exe(path, static_cast<size_t>(n));
  return exe.substr(0, exe.rfind('/'));
}

// NAME beside the running executable.
inline std::string besideSelf(const std::string& name) { return selfDirectory() + "/" + name; }

}  // namespace tsr
