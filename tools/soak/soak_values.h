// tsr-soak's values: every rank's input as a function of (rank, operation, element), and the
// exact value each output element must hold. Inputs are small integers (sums, minima and
// maxima are exact in every dtype, f16 and bf16 included, whatever the order of reduction)
// and, for prod, factors of 1 and -1 with a single 2 per element (the product is +-2). The
// average is the sum divided as the library divides it: in the dtype's arithmetic (float for
// f16 and bf16, then rounded back), truncated toward zero for integers. So every element is
// compared for equality, not within a tolerance. Pure: no I/O.
#pragma once

#include <cstddef>
#include <optional>

#include "tools/soak/soak_plan.h"

namespace tsr::tools::soak {

// Outputs are filled with this byte before a collective (not in place), so an element the
// collective never wrote cannot pass: 0xA5A5... is no value the checks expect, in any dtype.
inline constexpr unsigned char kPoisonByte = 0xA5;

// Element j of `rank`'s input for `op` on `size` ranks. Up to 32 ranks the values lie in
// [-8, 7]; above that the range shrinks so a sum of `size` of them stays exact in bf16
// (|sum| <= 256); valid for up to 256 ranks.
double inputValue(const Op& op, int size, int rank, size_t j);

// The value element j of `rank`'s output must hold (outputCount(op, size) elements).
double expectedValue(const Op& op, int size, int rank, size_t j);

// Writes inputCount(op, size) elements of `rank`'s input.
void fillInput(const Op& op, int size, int rank, void* input);

struct Mismatch {
  size_t element = 0;
  double expected = 0;
  double got = 0;
};
// The first output element that differs from expectedValue, if any.
std::optional<Mismatch> findMismatch(const Op& op, int size, int rank, const void* output);

}  // namespace tsr::tools::soak
