// Running a topology::Schedule (steps of block transfers, pure data, proven by topology's
// simulator) as part of a Plan: Rabenseifner's halving/doubling and Bruck's all-gather are
// written once, as schedules, and executed here; the ring and torus keep their hand-tuned
// builders (ring_phases.h).
//
// Words: the work range [base, base+count) of `work` is cut into the schedule's numBlocks
// blocks (partition.h balancedPart), and every block into the same number of chunks, the
// pipelining unit. Ordering is tracked per block chunk, not per step: a send waits for the
// last write of its chunk, a receive into place waits for that write and for the sends still
// reading the chunk, and a reduce lands in one of `window` staging chunks, then adds into the
// chunk once its earlier readers and writer are done. So a chunk reduced in one step is sent
// on in the next as soon as it is ready, without waiting for the whole step.
// A transfer's consecutive chunks travel together while the message is below
// min(chunkBytes, minMessageBytes) (small blocks at many ranks), and such a message is ordered
// against every chunk it covers.
// Message ids: idBase + step * K + k, with k the message's index within its transfer and K the
// largest transfer's chunk count; a pair exchanges at most one transfer per direction per step.
#pragma once

#include <vector>

#include "algorithms/dense/dense_plans.h"
#include "topology/schedule.h"

namespace tsr::algorithms {

struct SchedulePhase {
  const topology::Schedule* schedule = nullptr;
  std::vector<int> group;  // schedule rank i is communicator rank group[i]; empty = identity
  Slot work = Slot::kOutput;
  size_t base = 0;         // elements
  size_t count = 0;        // elements, split into schedule->numBlocks blocks
  uint32_t idBase = 0;     // first message id of this phase
  size_t stagingBase = 0;  // bytes into scratch where this phase's staging window starts
};

struct PhaseExtent {
  size_t chunksPerBlock = 1;
  uint32_t messageIds = 0;  // ids the phase uses, from idBase
  size_t stagingBytes = 0;  // scratch the phase needs from stagingBase
};

// What the phase needs: the same on every rank (computed from the whole schedule).
Result<PhaseExtent> schedulePhaseExtent(const SchedulePhase& phase, size_t elemSize, const DenseOptions& options);

// Appends this rank's operations; every op waits (transitively) for startDep. Returns a join
// op that completes when the whole phase has on this rank.
Result<uint32_t> addSchedulePhase(Plan& plan, int rank, const SchedulePhase& phase, uint32_t startDep,
                                  const DenseOptions& options);

}  // namespace tsr::algorithms
