// Splitting a buffer into blocks and chunks the same way on every rank, so both sides of a
// transfer agree on offsets and sizes without telling each other.
#pragma once

#include <algorithm>
#include <cstddef>

namespace tsr::algorithms {

struct Range {
  size_t offset = 0;  // elements
  size_t count = 0;
};

// Part i of `parts` nearly equal parts of [0, count): the first count % parts get one more.
inline Range balancedPart(size_t count, size_t parts, size_t i) {
  size_t base = count / parts, extra = count % parts;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

inline size_t ceilDiv(size_t a, size_t b) { return (a + b - 1) / b; }

}  // namespace tsr::algorithms
