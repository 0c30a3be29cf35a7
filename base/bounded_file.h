// Reading a whole file with a size limit: every file Tessera reads (hostfiles, topology XML,
// the job secret) comes from the user or a shared file system, and a wrong path (/dev/zero, a
// log, a core dump) must end in an error naming the file, not in an exhausted memory.
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"

namespace tsr {

// The file's contents, or kInvalidArgument naming `what`, the path and the reason (cannot be
// opened, not a regular file or device, more than maxBytes).
Result<std::string> readBoundedFile(const std::string& path, size_t maxBytes, const std::string& what);

}  // namespace tsr
