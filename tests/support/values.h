// Tests use the shared reference values (base/reference_values.h) under tsr::testing.
#pragma once

#include "base/reference_values.h"

namespace tsr::testing {
using namespace tsr::reference;
}  // namespace tsr::testing
