// Helpers every tsr-bench runner uses: waiting on a posted collective, medians, and finding
// the elements where the ranks' results differ.
#pragma once

#include <string>
#include <vector>

#include "runtime/communicator.h"

namespace tsr::tools::bench {

// Waits for a posted collective; `algo` (if given) receives the algorithm that served it.
Status waitFor(Result<runtime::RequestPtr> posted, std::string* algo = nullptr);

double median(std::vector<double> v);

// Collective. Empty when every rank holds the same bits in `result` (compared by a 64-bit
// hash first); otherwise one flag per element, set where some ranks' values differ.
Result<std::vector<bool>> differsAcrossRanks(runtime::Communicator& comm, const std::vector<float>& result);

}  // namespace tsr::tools::bench
