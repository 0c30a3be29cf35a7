// What fault_worker's modes share: how a rank reports a failure (the line the process tests
// read, tests/support/job_report.h) and waiting on a posted call.
#pragma once

#include <cstdio>
#include <string>

#include "runtime/communicator.h"

inline int failed(int rank, const std::string& what, const tsr::Status& st) {
  std::printf("rank %d: FAILED %s: %s\n", rank, what.c_str(), st.toString().c_str());
  std::fflush(stdout);
  return 3;
}

// What goes wrong in fault_worker's grow modes (grow_check.cc), besides the first victim's death.
enum class GrowFault { kNone, kReplacementVanishes, kMemberDies };

inline tsr::Status wait(tsr::Result<tsr::runtime::RequestPtr> posted) {
  return posted.isOk() ? posted.value()->wait() : posted.status();
}
