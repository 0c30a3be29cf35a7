// Schedule: a collective written down as data, one list of steps per rank.
//
// Vocabulary:
//  * block: the buffer is split into `numBlocks` nearly equal blocks (block b holds elements
//    [b*count/numBlocks, (b+1)*count/numBlocks)). Block ids are global: block 5 is the same
//    slice of the buffer on every rank.
//  * BlockRange {first, count}: blocks first, first+1, ..., first+count-1, each taken modulo
//    numBlocks (a range may wrap around the end of the buffer). A Transfer carries a list of
//    ranges, packed on the wire in list order, block after block.
//  * step: the unit of lock-step progress. Step s of rank r posts all its sends and receives at
//    once; the step is done when they all completed. Every send of step s has exactly one
//    matching receive posted in step s by its peer (same pair, same blocks, same combine), so
//    an executor that runs its steps in order never deadlocks and can tag messages by step.
//  * semantics of one step: every send reads the buffer as it was when the step began; after
//    all transfers of the step arrived, each received payload is combined into the listed
//    blocks: kReduce adds it (the collective's reduction), kCopy overwrites. A rank never
//    receives (copy) into a block it sends in the same step, so it may send straight from the
//    user buffer; reduce payloads land in scratch first.
//  * every rank has the same number of steps; a rank idle in a step has an empty Step.
//
// Builders (ring_schedule.h, torus_schedule.h, recursive_schedule.h, bruck_schedule.h,
// tree_schedule.h, spardl_schedule.h) are pure functions; simulator.h proves them.
#pragma once

#include <string>
#include <vector>

namespace tsr::topology {

enum class Collective { kAllreduce, kReduceScatter, kAllGather, kBroadcast };
const char* collectiveName(Collective collective);

enum class Combine { kCopy, kReduce };

struct BlockRange {
  int first = 0;
  int count = 0;
  bool operator==(const BlockRange&) const = default;
};

struct Transfer {
  int peer = -1;                     // the other rank
  std::vector<BlockRange> blocks;    // what travels, in wire order
  Combine combine = Combine::kCopy;  // what the receiver does with it (same on both sides)
  int numBlocks() const;
  bool operator==(const Transfer&) const = default;
};

struct Step {
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
  bool empty() const { return sends.empty() && recvs.empty(); }
};

struct Schedule {
  std::string name;  // "ring-allreduce", "torus-allreduce 4x2", ...
  Collective collective = Collective::kAllreduce;
  int numRanks = 0;
  int numBlocks = 0;  // blocks the buffer is split into
  int root = 0;       // broadcast only
  // Reduce-scatter and all-gather: the block each rank ends with (reduce-scatter) or starts
  // with (all-gather). Empty means rank r owns block r. Allreduce and broadcast use every block.
  std::vector<int> ownedBlock;
  std::vector<std::vector<Step>> steps;  // steps[rank][step]
  // Blocks in the largest transfer of any rank, set by ScheduleBuilder::finish (0: not set):
  // plans need it on every rank, and at thousands of ranks a scan per rank adds up.
  int largestTransferBlocks = 0;

  int blockOwnedBy(int rank) const { return ownedBlock.empty() ? rank : ownedBlock[rank]; }

  int numSteps() const { return steps.empty() ? 0 : static_cast<int>(steps[0].size()); }
};

// Blocks of a list of ranges, expanded in wire order (mod numBlocks).
std::vector<int> expandBlocks(const std::vector<BlockRange>& ranges, int numBlocks);

// Human-readable listing, one line per rank and step ("r3 s2: send 4 [5+1] reduce; recv 2 ...").
std::string describe(const Schedule& schedule);

// Blocks each rank sends over the whole schedule (the traffic the schedule costs).
std::vector<long> blocksSentPerRank(const Schedule& schedule);

// Assembles a schedule: transfers are added by (step, from, to); steps grow as needed and
// finish() pads every rank to the same length. Used by every builder and by composed
// schedules (the torus runs ring phases on rows and columns through one builder).
class ScheduleBuilder {
 public:
  ScheduleBuilder(std::string name, Collective collective, int numRanks, int numBlocks);

  // Adds the send on `from` and the matching receive on `to`, both in `step`.
  void transfer(int step, int from, int to, std::vector<BlockRange> blocks, Combine combine);
  // Number of steps used so far.
  int numSteps() const;
  void setRoot(int root) { schedule_.root = root; }
  void setOwnedBlocks(std::vector<int> owned) { schedule_.ownedBlock = std::move(owned); }
  Schedule finish();

 private:
  void grow(int steps);
  Schedule schedule_;
  int grown_ = 0;  // every rank has at least this many steps (a transfer checks this, not N ranks)
};

// Appends `range` to `ranges`, merging it into the last range when contiguous (mod numBlocks).
void appendRange(std::vector<BlockRange>& ranges, BlockRange range, int numBlocks);

}  // namespace tsr::topology
