// Which names of a hostfile or -H list are this machine, and so which entries share one machine:
// the one rule tsrun (which ranks it starts itself, their local ranks) and tsr-topo (the hosts
// of the job it draws) follow, so both see the same hosts.
//
// A *local* name: localhost (localhost.localdomain), any 127.a.b.c, ::1, or one of this
// machine's names (localHostNames), compared without case. Every local name is the same
// machine; any other name is a machine of its own, as written.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "topology/hostfile.h"

namespace tsr::topology {

// True for localhost, 127.x.x.x, ::1 and any name in localNames.
bool isLocalHost(std::string_view name, const std::vector<std::string>& localNames);

// The machine of each entry: the name as written for a remote host; for every local entry the
// name of the first local entry, so they count as one machine.
std::vector<std::string> machineNames(const std::vector<HostEntry>& hosts, const std::vector<std::string>& localNames);

// This machine's names: gethostname() and, when it has dots, its first label. Empty entries are
// left out.
std::vector<std::string> localHostNames();

}  // namespace tsr::topology
