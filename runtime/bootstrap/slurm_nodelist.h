// Slurm's compact host and task lists, expanded.
//
// A nodelist is comma-separated items; an item is text with zero or more bracket groups, each a
// comma-separated list of numbers or ranges: `node[01-03,7],gpu5` -> node01 node02 node03 node7
// gpu5. Several groups multiply (`r[1-2]n[1-2]` -> r1n1 r1n2 r2n1 r2n2). A range keeps the width
// of its first bound when that bound has leading zeros, as Slurm prints them.
// A tasks-per-node list is comma-separated counts, each optionally repeated: `2(x3),1` -> 2 2 2 1.
// Pure functions: no environment, no I/O.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace tsr::runtime {

// Expands a Slurm nodelist (`SLURM_JOB_NODELIST`) into host names in order.
Result<std::vector<std::string>> expandNodelist(const std::string& nodelist);

// Expands a Slurm tasks-per-node list (`SLURM_TASKS_PER_NODE`) into one count per node.
Result<std::vector<int>> expandTasksPerNode(const std::string& tasksPerNode);

}  // namespace tsr::runtime
