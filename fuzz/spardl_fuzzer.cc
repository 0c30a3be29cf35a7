// SparDL messages from hostile peers (sparse_wire.h), through the step task that receives
// them (spardl_step.cc: decode, then the checks against the schedule, then the merge). The
// first bytes choose the job (jobs.h: ranks, teams, SAG, this rank, tensor size, density), as
// any caller's arguments might; every receive of the step then gets the next message of the
// input (fuzz_transport.h).
#include "fuzz/jobs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < tsr::fuzz::kSparDLHead) return 0;
  auto job = tsr::fuzz::spardlJob(data);
  if (job) tsr::fuzz::runAgainstInput(*job, data + tsr::fuzz::kSparDLHead, size - tsr::fuzz::kSparDLHead);
  return 0;
}
