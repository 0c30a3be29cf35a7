#include "algorithms/dense/shm_staged_layout.h"

#include <algorithm>

#include "algorithms/dense/shm_staging.h"

namespace tsr::algorithms {

namespace {

size_t elementsPerStage(DataType dtype) { return kShmStageBytes / dataTypeSize(dtype); }

}  // namespace

bool ShmStagedLayout::serves(CollectiveKind kind, DataType dtype, int size) {
  switch (kind) {
    case CollectiveKind::kAllreduce:
    case CollectiveKind::kAllgather:
    case CollectiveKind::kBroadcast:
      return size > 0;
    case CollectiveKind::kReduceScatter:
      return size > 0 && static_cast<size_t>(size) <= elementsPerStage(dtype);
    case CollectiveKind::kBarrier:
    case CollectiveKind::kAlltoall:  // blocks of every size: peer to peer, not staged
      break;
  }
  return false;
}

ShmStagedLayout::ShmStagedLayout(CollectiveKind kind, size_t count, DataType dtype, int size, int root)
    : kind_(kind),
      count_(count),
      esize_(dataTypeSize(dtype)),
      perChunk_(elementsPerStage(dtype)),
      size_(size),
      root_(root) {
  if (kind_ == CollectiveKind::kReduceScatter) perChunk_ /= static_cast<size_t>(size_);
  chunks_ = (count_ + perChunk_ - 1) / perChunk_;
}

size_t ShmStagedLayout::chunkLength(uint64_t chunk) const {
  return std::min(perChunk_, count_ - static_cast<size_t>(chunk) * perChunk_);
}

int ShmStagedLayout::posts(int rank) const {
  switch (kind_) {
    case CollectiveKind::kReduceScatter:
      return size_;
    case CollectiveKind::kBroadcast:
      return rank == root_ ? 1 : 0;
    default:
      return 1;
  }
}

ShmPiece ShmStagedLayout::post(uint64_t chunk, int /*rank*/, int i) const {
  const size_t begin = static_cast<size_t>(chunk) * perChunk_, n = chunkLength(chunk);
  if (kind_ == CollectiveKind::kReduceScatter)
    return {static_cast<size_t>(i) * n, static_cast<size_t>(i) * count_ + begin, n};
  return {0, begin, n};
}

ShmPiece ShmStagedLayout::reduce(uint64_t chunk, int rank) const {
  const size_t begin = static_cast<size_t>(chunk) * perChunk_, n = chunkLength(chunk);
  if (kind_ == CollectiveKind::kReduceScatter) return {static_cast<size_t>(rank) * n, begin, n};
  if (kind_ != CollectiveKind::kAllreduce) return {};
  const size_t ranks = static_cast<size_t>(size_), r = static_cast<size_t>(rank);
  const size_t lo = n * r / ranks, hi = n * (r + 1) / ranks;
  return {lo, begin + lo, hi - lo};
}

ShmPiece ShmStagedLayout::gather(uint64_t chunk, int rank, int peer) const {
  const size_t begin = static_cast<size_t>(chunk) * perChunk_, n = chunkLength(chunk);
  switch (kind_) {
    case CollectiveKind::kAllreduce:
      return peer == rank ? ShmPiece{} : reduce(chunk, peer);
    case CollectiveKind::kAllgather:
      return {0, static_cast<size_t>(peer) * count_ + begin, n};
    case CollectiveKind::kBroadcast:
      return peer == root_ ? ShmPiece{0, begin, n} : ShmPiece{};
    default:
      return {};
  }
}

uint64_t ShmStagedLayout::bytesPublished(int rank) const {
  uint64_t elements = 0;
  for (uint64_t c = 0; c < chunks_; ++c) {
    for (int i = 0; i < posts(rank); ++i) elements += post(c, rank, i).count;
    if (writesBack()) elements += reduce(c, rank).count;
  }
  return elements * esize_;
}

}  // namespace tsr::algorithms
