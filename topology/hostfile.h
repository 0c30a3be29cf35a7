// Hostfile parsing (pure): the job's hosts and how many ranks each takes.
//
// One host per line, in any of these forms:
//   node01 slots=8     node01:8     node01        (bare host = 1 slot)
// '#' starts a comment (whole line or trailing); blank lines are ignored. A host listed twice
// gets the sum of its slots and keeps its first position. Errors name the file and line.
// (tools/tsrun has its own copy for now; the two will be merged.)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tsr::topology {

struct HostSlots {
  std::string host;
  int slots = 1;
  bool operator==(const HostSlots&) const = default;
};

Result<std::vector<HostSlots>> parseHostfile(std::string_view text, std::string_view fileName);

// Ranks 0..np-1 dealt by slot (fill the first host, then the next): the host index of each
// rank. np = 0 means "all slots". Error when np exceeds the slots.
Result<std::vector<int>> mapRanksBySlot(const std::vector<HostSlots>& hosts, int np);

}  // namespace tsr::topology
