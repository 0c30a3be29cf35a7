// Runs a test body once per instruction set the CPU supports, restoring the default after.
#pragma once

#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/kernels/isa.h"

namespace tsr::kernels::testing {

inline std::vector<Isa> supportedIsas() {
  std::vector<Isa> out{Isa::kPortable};
  if (bestIsa() == Isa::kAvx2) out.push_back(Isa::kAvx2);
  return out;
}

inline void forEachIsa(const std::function<void(Isa)>& body) {
  for (Isa isa : supportedIsas()) {
    ASSERT_TRUE(setActiveIsa(isa));
    SCOPED_TRACE(isaName(isa));
    body(isa);
  }
  ASSERT_TRUE(setActiveIsa(bestIsa()));
}

}  // namespace tsr::kernels::testing
