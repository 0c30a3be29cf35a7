// Marsit's bit segments and scalars from hostile peers, through the flat step task
// (marsit_step.cc: the stages that run the scalar allreduce of the scale means and
// the NaN count beside the ring of merged sign bits, then the decompression with what
// arrived). The first bytes choose the job (jobs.h: ranks, rank, tensor size, parameters),
// as any caller's arguments might; every receive then gets the next message of the input (fuzz_transport.h).
#include "fuzz/jobs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < tsr::fuzz::kMarsitHead) return 0;
  auto job = tsr::fuzz::marsitJob(data);
  if (job) tsr::fuzz::runAgainstInput(*job, data + tsr::fuzz::kMarsitHead, size - tsr::fuzz::kMarsitHead);
  return 0;
}
