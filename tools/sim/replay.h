// Replays a job's plans (sim_job.h) in SimGrid: one actor per rank, running its Plan the way
// PlanExecutor does (algorithms/plan/executor.h):
//  * an op starts when its deps are done; ready transfers are posted first, in plan order, then
//    ready local ops run one at a time on the rank's core, then completions are collected;
//  * a send and the receive of the same (sender, receiver, message id) match as UCX tags do;
//    once both are posted, one SimGrid communication of the op's bytes goes host to host
//    (UCX's rendezvous, what the ring's 512 KiB chunks use);
//  * the 32-byte argument header goes once per (sender, receiver) pair, carrying the first
//    message when that is <= 256 bytes; a receive counts only once its peer's header is in;
//  * copy, reduce (also a receive-and-reduce's reduction and a reduction on arrival), divide,
//    Marsit's chunk packing and bit merge: an execution of bytes / rate seconds on the rank's
//    core;
//  * a compressed step's other parts (JobPlans): its passes over the buffer before and after
//    the plans, a plan before the main one, and one beside it once the main plan's packing is
//    done, as the runtime's step stages them.
// Not modelled: UCX's eager protocol and its copies, transport progress overheads, the
// collective's set-up, memory bandwidth shared by ranks of one host.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/sim/platform.h"
#include "tools/sim/sim_job.h"

namespace tsr::sim {

struct ReplayOptions {
  // Local math in bytes of the op's count per second; 0 = free. Defaults: the order of
  // tsr-kernel-bench's f32 sum (~0.7-1x a memcpy) and memcpy on a small server.
  double reduceRate = 6e9;
  double copyRate = 8e9;
  // Marsit's packing (kLocal) and bit merge (kRecvMerge): bytes of the f32 elements they stand
  // for (64 a word) per second; 0 = free. tsr-kernel-bench on a 2-core VM: sign pack 18.9,
  // merge 13.3 GB/s.
  double packRate = 13e9;
  // SparDL's selection of a block's k_b largest magnitudes (the plan's reduces, spardl_plan.h):
  // bytes of the f32 elements scanned per second; 0 = free. tsr-bench's split on 2 ranks here:
  // 2.4 GB/s at 4 MiB, 3.4 at 64 MiB.
  double selectRate = 3e9;
  // A compressed step's passes over its vectors outside its plans (JobPlans::prepareBytes,
  // finishBytes): bytes read and written per second; 0 = free. Marsit's flat finish (36 bytes an
  // element) in tsr-bench's split on 2 ranks here: 15-18 GB/s, this machine's memory bandwidth.
  double passRate = 16e9;
  bool headers = true;
  // "ideal": SimGrid's CM02 with no correction factors, no TCP window bound and no reverse
  // (ACK) traffic: a message costs latency + bytes / rate exactly. "lv08": SimGrid's default
  // TCP model (latency x13.01, rate x0.97, ACK traffic), closer to a kernel TCP stack.
  std::string network = "ideal";
  // Transfers in flight at once (each an actor with its own stack); past it the replay stops
  // with an error. 0: as many as half the memory available holds.
  size_t maxTransfersInFlight = 0;
  // Transfers in flight per (sender, receiver) pair; later ones wait in the order they
  // matched, as bytes queue on one TCP connection or UCX endpoint. 0: no bound (every matched
  // transfer shares the path at once).
  int pairWindow = 0;
};

struct ReplayResult {
  double seconds = 0;          // when the last rank finished
  std::vector<double> finish;  // per rank
  uint64_t payloadBytes = 0;   // plan transfers (inlined first messages included)
  uint64_t headerBytes = 0;    // argument headers
  uint64_t messages = 0;       // SimGrid communications
  double computeSeconds = 0;   // local math, all ranks
};

// Runs one simulation. SimGrid allows one engine per process: call this once per process.
Result<ReplayResult> replay(const JobPlans& job, const PlatformSpec& platform, const ReplayOptions& options,
                            int ranksPerHost);

}  // namespace tsr::sim
