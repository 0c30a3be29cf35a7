// Slurm's SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE (slurm_nodelist.h), as a job's
// environment hands them over. The expansions must stay within the documented limits.
#include <cstdint>
#include <string>

#include "runtime/bootstrap/slurm_nodelist.h"

using namespace tsr::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    auto counts = expandTasksPerNode(text);
    if (counts.isOk()) {
      if (counts.value().empty() || counts.value().size() > (size_t{1} << 20)) __builtin_trap();
      for (int c : counts.value())
        if (c < 1) __builtin_trap();
    }
    return 0;
  }
  auto hosts = expandNodelist(text);
  if (hosts.isOk()) {
    if (hosts.value().empty() || hosts.value().size() > (size_t{1} << 20)) __builtin_trap();
    for (const std::string& h : hosts.value())
      if (h.empty()) __builtin_trap();
  }
  return 0;
}
