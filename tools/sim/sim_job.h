// The plans a Tessera job would run, built the way the runtime builds them, without a network:
// placements -> topology::HostMap -> ring order and torus grid (as Communicator::init), the
// DenseOptions defaults of runtime/config.cc, and the dense builders chosen by name as
// algorithms/dense/dense_selector.cc does ("auto": the cost model's first choice for the job's links);
// "marsit": Marsit's ring on the signs of an f32 buffer of `bytes` (algorithms/marsit/marsit_plan.h);
// "marsit-torus": the same bits over the torus grid (algorithms::torusSignMergePlan);
// "marsit-2level": the host average, then Marsit across hosts on its row blocks (hier_plan.h);
// "spardl": SparDL's schedule with full bags at `density` (spardl_plan.h).
// Pure: no SimGrid here, so the plans and their byte counts are testable alone.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/dense/cost_model.h"
#include "algorithms/dense/dense_plans.h"

namespace tsr::sim {

struct SimJob {
  int ranks = 8;
  int ranksPerHost = 1;                  // ranks h*R .. h*R+R-1 share host h
  std::string collective = "allreduce";  // allreduce | allgather
  std::string algorithm =
      "auto";        // allreduce: ring|rabenseifner|doubling|torus|hier|marsit|marsit-torus|marsit-2level|spardl;
                     // allgather: ring|bruck
  size_t bytes = 0;  // allreduce: the buffer; allgather: each rank's part
  DataType dtype = DataType::kF32;
  ReduceOp op = ReduceOp::kSum;
  size_t chunkBytes = 512 * 1024;      // TSR_CHUNK_BYTES
  int window = 4;                      // TSR_WINDOW
  size_t minMessageBytes = 64 * 1024;  // TSR_MIN_MESSAGE_BYTES
  std::string arrival = "auto";        // TSR_ARRIVAL_REDUCE: auto|on|off
  algorithms::LinkModel links;         // for "auto"
  double density = 0.01;               // spardl: the share of each block sent
  int teams = 1;                       // spardl: teams (R-SAG: a power of two dividing the ranks)
};

struct JobPlans {
  std::string algorithm;                                 // the one built
  std::vector<std::shared_ptr<algorithms::Plan>> plans;  // by rank
  std::vector<int> order;                                // ring order
  std::vector<std::vector<int>> grid;                    // torus/hier grid, empty when the job has none
  int hosts = 1;
  std::vector<int> hostOfRank;
  std::vector<std::string> refused;  // "name: why" of algorithms tried before that cannot serve the job
  bool argumentHeaders = true;       // the executor's 32-byte header per pair (SparDL sends its own)
  bool reducesSelect = false;        // SparDL: its reduces are top-k selections (and small merges)
  // A compressed step's other parts, by rank (empty for dense): `beside` runs alongside `plans`
  // once their kLocal (packing) ops are done (Marsit's allreduce of its scales); `before` runs
  // first (two-level Marsit's host average). prepareBytes and finishBytes: what the step's
  // passes over its vectors before and after its plans read and write (ReplayOptions::passRate).
  std::vector<std::shared_ptr<algorithms::Plan>> before, beside;
  double prepareBytes = 0, finishBytes = 0;
};

// The runtime's ranges (runtime/config.cc: TSR_CHUNK_BYTES, TSR_MIN_MESSAGE_BYTES): a job the
// runtime would refuse is not simulated (a 0 chunk made plans of endless steps, a 100-byte one
// a replay of minutes).
constexpr size_t kMinChunkBytes = 1024, kMaxChunkBytes = size_t{1} << 30;
constexpr size_t kMinMessageFloor = 1, kMinMessageCeiling = size_t{1} << 30;

// The algorithms tsr-sim builds for a collective, "auto|ring|..."; empty for an unknown collective.
std::string simAlgorithms(const std::string& collective);

// Refuses a job the runtime would refuse or tsr-sim cannot model, naming tsr-sim's option and
// the value: an unknown collective, an algorithm that is not one of that collective's (the
// builders would make a ring of any other name), an --arrival other than auto|on|off, a
// --chunk or --min-message outside the runtime's range, a dtype or op the algorithm does not
// take (Marsit: f32, sum or avg; SparDL: f32 sum, density in (0, 1]; a bitwise op: integers).
// Errors are usage errors (kInvalidArgument). buildJobPlans calls it first.
Status validateJob(const SimJob& job);

Result<JobPlans> buildJobPlans(const SimJob& job);

// Payload bytes of every send of every plan (what the executor hands the transport, without
// the 32-byte argument headers), and the number of those sends.
uint64_t wireBytes(const JobPlans& plans);
uint64_t messageCount(const JobPlans& plans);
// Bus bandwidth factor (nccl-tests): allreduce 2(N-1)/N, allgather (N-1)/N.
double busFactor(const std::string& collective, int ranks);
// Bytes the collective's algorithm bandwidth is measured on: allreduce the buffer, allgather
// the whole output.
double algoBytes(const SimJob& job);

}  // namespace tsr::sim
