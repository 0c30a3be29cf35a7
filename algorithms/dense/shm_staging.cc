#include "algorithms/dense/shm_staging.h"

#include <new>

namespace tsr::algorithms {

size_t ShmStaging::areasBytes(int size) {
  const size_t page = 4096;  // stages start on a page boundary
  return (sizeof(ShmStagingArea) * static_cast<size_t>(size) + page - 1) / page * page;
}

size_t ShmStaging::bytesFor(int size) { return areasBytes(size) + 2 * kShmStageBytes * static_cast<size_t>(size); }

void ShmStaging::format(void* memory, int size) {
  auto* areas = static_cast<ShmStagingArea*>(memory);
  for (int r = 0; r < size; ++r) new (&areas[r]) ShmStagingArea();
}

unsigned char* ShmStaging::stage(int rank, uint64_t ticket) const {
  return base_ + areasBytes(size_) + (2 * static_cast<size_t>(rank) + ticket % 2) * kShmStageBytes;
}

}  // namespace tsr::algorithms
