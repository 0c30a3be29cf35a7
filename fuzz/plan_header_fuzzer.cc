// A dense collective's argument header and messages from hostile peers, through the plan
// executor that checks them (executor_headers.cc: takeHeader, checkHeader, the inlined first
// message) and then runs the plan on what arrives. The first bytes choose the collective and
// its arguments (jobs.h), as any caller's might; every receive then gets the next message of
// the input (fuzz_transport.h).
#include "fuzz/jobs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < tsr::fuzz::kPlanHead) return 0;
  auto job = tsr::fuzz::planJob(data);
  if (job) tsr::fuzz::runAgainstInput(*job, data + tsr::fuzz::kPlanHead, size - tsr::fuzz::kPlanHead);
  return 0;
}
