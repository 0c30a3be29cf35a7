#include "tools/soak/soak_values.h"

#include <algorithm>
#include <cstdint>

#include "base/reference_values.h"

namespace tsr::tools::soak {

namespace {

uint32_t mix(const Op& op, int rank, size_t j) {
  uint32_t h = static_cast<uint32_t>(j) * 0x9E3779B1u;
  h ^= op.salt + static_cast<uint32_t>(rank) * 0x85EBCA77u;
  h ^= h >> 16;
  h *= 0x7FEB352Du;
  h ^= h >> 15;
  return h;
}

int amplitude(int size) { return size <= 32 ? 8 : std::max(1, 256 / size); }

bool reduces(const Op& op) {
  return op.collective == Collective::kAllreduce || op.collective == Collective::kReduceScatter;
}

// The value a rank's input holds at element j (the reduction's operand).
double plainValue(const Op& op, int size, int rank, size_t j) {
  uint32_t h = mix(op, rank, j);
  if (reduces(op) && op.op == ReduceOp::kProd) {
    if (static_cast<int>((j + op.salt) % static_cast<size_t>(size)) == rank) return 2;
    return (h & 3u) == 0 ? -1 : 1;
  }
  int a = amplitude(size);
  return static_cast<double>(static_cast<int>((h >> 8) % static_cast<uint32_t>(2 * a)) - a);
}

// A double as it reads back after being stored in dtype t.
double roundTrip(double v, DataType t) {
  unsigned char bytes[8];
  reference::storeValue(bytes, 0, t, v);
  return reference::loadValue(bytes, 0, t);
}

// Element j of the reduction over every rank's input (the input's own indexing).
double reduced(const Op& op, int size, size_t j) {
  double acc = plainValue(op, size, 0, j);
  for (int r = 1; r < size; ++r) acc = reference::combine(op.op, acc, plainValue(op, size, r, j));
  if (op.op != ReduceOp::kAvg || size <= 1) return acc;
  switch (op.dtype) {  // as kernels::divideInPlace divides
    case DataType::kF64:
      return acc / size;
    case DataType::kF32:
    case DataType::kF16:
    case DataType::kBF16:
      return roundTrip(static_cast<double>(static_cast<float>(acc) / static_cast<float>(size)), op.dtype);
    case DataType::kI32:
    case DataType::kI64:
      return static_cast<double>(static_cast<int64_t>(acc) / size);
  }
  return acc;
}

}  // namespace

double inputValue(const Op& op, int size, int rank, size_t j) { return plainValue(op, size, rank, j); }

double expectedValue(const Op& op, int size, int rank, size_t j) {
  switch (op.collective) {
    case Collective::kAllreduce:
      return reduced(op, size, j);
    case Collective::kReduceScatter:
      return reduced(op, size, static_cast<size_t>(rank) * op.count + j);
    case Collective::kAllgather:
      return plainValue(op, size, static_cast<int>(j / op.count), j % op.count);
    case Collective::kBroadcast:
      return plainValue(op, size, op.root, j);
    case Collective::kBarrier:
      return 0;
  }
  return 0;
}

void fillInput(const Op& op, int size, int rank, void* input) {
  size_t n = inputCount(op, size);
  for (size_t j = 0; j < n; ++j) reference::storeValue(input, j, op.dtype, plainValue(op, size, rank, j));
}

std::optional<Mismatch> findMismatch(const Op& op, int size, int rank, const void* output) {
  size_t n = outputCount(op, size);
  for (size_t j = 0; j < n; ++j) {
    double got = reference::loadValue(output, j, op.dtype);
    double want = expectedValue(op, size, rank, j);
    if (!(got == want)) return Mismatch{j, want, got};
  }
  return std::nullopt;
}

}  // namespace tsr::tools::soak
