// What fault_worker shrink runs as its long allreduces (FAULT_TENSOR): dense allreduces, steps
// of a tensor of any algorithm (algorithms/tensors), or steps of a COVAP or SelSync handle.
// After the shrink each carries its state over to the survivors' communicator and checks it:
// nothing the failed step touched was lost or counted, and the next step agrees on every
// survivor.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "runtime/communicator.h"

class FaultSteps {
 public:
  virtual ~FaultSteps() = default;
  // Starts step `i`, calling `midway` once it is under way (a victim dies there); the
  // function returned waits for the step to end.
  virtual std::function<tsr::Status()> post(int i, const std::function<void()>& midway) = 0;
  // After the shrink: moves to `next` with its state and checks it. "" or what was wrong.
  virtual std::string moveAndCheck(tsr::runtime::Communicator& next) = 0;
  // What the rank's report says of it once moveAndCheck passed ("" for dense allreduces).
  virtual std::string movedLine() const = 0;
};

// From FAULT_TENSOR: unset = dense allreduces; covap or selsync = those handles; any other
// value = a tensor of that algorithm. Steps of `count` f32 elements; an error names what failed.
tsr::Result<std::unique_ptr<FaultSteps>> makeFaultSteps(tsr::runtime::Communicator& comm, size_t count);
