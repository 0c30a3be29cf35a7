// The few facts tsrun takes from the machine: its names, free ports, random bytes, files.
// Kept apart from the pure planning code so that code can be tested without them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/status.h"
#include "topology/local_host.h"

namespace tsr::tools::tsrun {

// gethostname() and, when it has dots, its first label (shared with tsr-topo).
using topology::localHostNames;

// n distinct TCP ports that were free on this machine: all n sockets are bound to port 0
// (any address) at once, their ports read, then closed. Another process may still take a
// port before the rank binds it; the runtime's bootstrap reports that as a bind error.
Result<std::vector<int>> pickFreePorts(int n);

// bytes random bytes from OpenSSL RAND_bytes, as lowercase hex (2 * bytes characters).
Result<std::string> randomHex(int bytes);

// A hostfile is text of a few lines per host: more than this is a wrong path (/dev/zero, a log).
constexpr size_t kMaxHostfileBytes = size_t{1} << 20;

// The hostfile's text; errors name the path (cannot be read, larger than kMaxHostfileBytes).
Result<std::string> readTextFile(const std::string& path);

}  // namespace tsr::tools::tsrun
