// fault_worker's shrink modes (shrink_check.cc): how the lost ranks are lost.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/communicator.h"

enum class Fault { kKill, kStop, kCut };

int runShrink(tsr::runtime::Communicator& comm, const std::string& victims, size_t count, Fault fault);
