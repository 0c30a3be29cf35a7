// Hostfile and -H host list parsing (tsrun's and tsr-topo's): pure functions from text to host
// entries, no I/O.
//
// Vocabulary: a *host entry* is a host name with a number of *slots* (ranks it may run).
// Accepted hostfile lines (one host per line, like Open MPI's hostfile):
//   host slots=N     host:N     host (1 slot)     # comment     (blank line)
// A trailing "# comment" after an entry is allowed. A host named twice is one host whose slots
// add up (first position kept), as mpirun does, so ranks on one machine stay adjacent.
// Every error names the file, the line number and the offending text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tsr::topology {

struct HostEntry {
  std::string name;
  int slots = 1;
  int line = 0;  // 1-based line (hostfile) or item (host list) where the host first appears

  bool operator==(const HostEntry&) const = default;
};

// Parses the contents of a hostfile. fileName only labels error messages.
Result<std::vector<HostEntry>> parseHostfile(std::string_view text, std::string_view fileName);

// Parses a -H list "host1:4,host2,host3:2" (bare host = 1 slot).
Result<std::vector<HostEntry>> parseHostList(std::string_view list);

// Sum of the slots of all entries.
int totalSlots(const std::vector<HostEntry>& hosts);

// Ranks 0..np-1 dealt by slot (fill the first host, then the next): the host index of each
// rank. np = 0 means "all slots". Error when np exceeds the slots; `source` names where the
// hosts came from in it ("the hostfile", "the host list").
Result<std::vector<int>> mapRanksBySlot(const std::vector<HostEntry>& hosts, int np, std::string_view source);

}  // namespace tsr::topology
