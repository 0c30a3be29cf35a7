// fault_worker's shrink modes (shrink_check.cc): how the lost ranks are lost.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/communicator.h"

// kKill: SIGKILLed mid-allreduce; kStop: SIGSTOPped, woken after the others shrank; kCut: cut
// off from outside; kSlow: no failure, every rank shrinks, the named ones a second late (all
// must stay); kDieDuring: the first named rank killed mid-allreduce, the second while the
// shrink runs (one call must still give the others a communicator without both).
enum class Fault { kKill, kStop, kCut, kSlow, kDieDuring };

int runShrink(tsr::runtime::Communicator& comm, const std::string& victims, size_t count, Fault fault);
