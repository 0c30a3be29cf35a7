// Building blocks of ring plans, shared by the ring builders (ring_plans.cc) and the 2D torus
// (torus_plans.cc), which runs rings over groups of ranks (a row, a column).
//
// Words: a ring view is this rank's place on a ring of `size` ranks (order[p] = the rank at
// position p). The work range [base, base+count) is cut into `size` blocks; position p owns
// block blockIds[p]. Each block is cut into `chunks` chunks, the pipelining unit. A phase's
// message ids start at its idBase, so phases of one plan never share an id.
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/dense/partition.h"
#include "algorithms/plan/plan.h"

namespace tsr::algorithms::ring_detail {

constexpr uint32_t kNone = UINT32_MAX;

struct RingView {
  int size;
  int pos;
  int left;
  int right;
  std::vector<int> order;     // position -> rank
  std::vector<int> blockIds;  // position -> the block it owns
  int blockOwner(int q) const { return blockIds[((q % size) + size) % size]; }
};

// The whole job's ring (order empty = identity); rank r owns block r.
Result<RingView> makeRing(int rank, int size, const std::vector<int>& order);
// A ring over `members` (in ring order); position p owns block p.
Result<RingView> makeGroupRing(int rank, const std::vector<int>& members);

struct Layout {
  size_t base;   // first element of the work range
  size_t count;  // elements in the work range
  size_t esize;
  size_t chunks;
  Range chunk(const RingView& ring, int q, size_t c) const {
    Range block = balancedPart(count, ring.size, ring.blockOwner(q));
    Range part = balancedPart(block.count, chunks, c);
    return {base + block.offset + part.offset, part.count};
  }
};

// Chunks per block: at most chunkBytes each, at least 8 while they stay >= 64 KiB, and few
// enough that `phases` phases of message ids fit the tag.
size_t chunksPerBlock(size_t maxBlock, size_t elemSize, size_t chunkBytes, int size, int phases = 2);
size_t maxChunkElems(const Layout& L, int size);

// Reduce-scatter over the ring: after size-1 steps this position's block holds the reduction.
// Received chunks land in one of `window` staging chunks at stagingBase (scratch) before they
// are reduced (signMerge: Marsit-merged, the incoming bits standing for k+1 workers at step k,
// random bits keyed by mergeRound).
// localReady (optional, from addLocalPrep): per block id and chunk, the op that readies this
// rank's own data of that chunk; a chunk's first send and its merge then wait for that op
// (and not startDep), so a pipelined preparation overlaps the sends.
// Returns, per chunk, the op that completes this rank's own block chunk.
std::vector<uint32_t> addReduceScatter(Plan& plan, const RingView& ring, const Layout& L, Slot work, uint32_t startDep,
                                       size_t stagingBase, int window, size_t stagingElems, uint32_t idBase = 0,
                                       bool signMerge = false, uint32_t mergeRound = 0,
                                       const std::vector<uint32_t>& localReady = {});
// Marks the reduce-scatter's transfers among ops [from, to) to be reduced on arrival
// (PlanOp::onArrival). The phase must have been built with a window of stagingSlots(): one
// slot per receive, so no receive waits for another's staging.
void markReduceOnArrival(Plan& plan, uint32_t from, uint32_t to);
// Receives of a reduce-scatter phase over L: a window that large never reuses a slot.
int stagingSlots(const Layout& L, int size);
// One kLocal op per non-empty chunk of the layout, listed in the order the reduce-scatter
// first needs them (the block sent first, then the block merged first, ...). Returns the ops
// indexed [blockId * L.chunks + chunk] (kNone for empty chunks), for addReduceScatter.
std::vector<uint32_t> addLocalPrep(Plan& plan, const RingView& ring, const Layout& L, Slot work);
// All-gather over the ring, each position starting from its own block; prev[c] is what chunk c
// of this position's block waits for. Returns the last op per chunk.
std::vector<uint32_t> addAllgather(Plan& plan, const RingView& ring, const Layout& L, Slot work,
                                   std::vector<uint32_t> prev, uint32_t idBase);

uint32_t addCopy(Plan& plan, Slot dst, size_t dstOff, Slot src, size_t srcOff, size_t count);
// An empty op that completes when all of deps have (kNone entries ignored).
uint32_t addJoin(Plan& plan, const std::vector<uint32_t>& deps);
// An empty op that completes when every op from index `first` on has, and `after` too: the
// end of a phase, whatever its chunks did.
uint32_t addPhaseEnd(Plan& plan, uint32_t first, uint32_t after);

}  // namespace tsr::algorithms::ring_detail
