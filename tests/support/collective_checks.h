// Checks shared by the multi-rank tests: run one collective on this rank with reference inputs
// and compare against the float64 reference (exactly for integers).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/communicator.h"
#include "tests/support/values.h"

namespace tsr::testing {

// One allreduce (in place or not) checked element by element (the first 3 misses reported);
// returns the algorithm that served it ("" when it could not be posted).
inline std::string checkAllreduce(runtime::Communicator& comm, DataType t, ReduceOp op, size_t count, bool inPlace) {
  size_t esize = dataTypeSize(t);
  std::vector<char> in(count * esize + 1), out(count * esize + 1);
  for (size_t j = 0; j < count; ++j) storeValue(in.data(), j, t, inputValue(comm.rank(), j, op));
  void* dst = inPlace ? in.data() : out.data();
  auto req = comm.allreduce(in.data(), dst, count, t, op);
  EXPECT_TRUE(req.isOk()) << req.status().toString();
  if (!req.isOk()) return "";
  Status st = req.value()->wait();
  std::string where = std::string("allreduce ") + dataTypeName(t) + " " + reduceOpName(op) + " count " +
                      std::to_string(count) + (inPlace ? " in-place" : " out-of-place") + " rank " +
                      std::to_string(comm.rank()) + " algo " + req.value()->algorithm();
  EXPECT_TRUE(st.isOk()) << where << ": " << st.toString();
  if (!st.isOk()) return req.value()->algorithm();
  for (size_t j = 0, bad = 0; j < count && bad < 3; ++j) {
    double want = reduceReference(comm.size(), j, op, t);
    double got = loadValue(dst, j, t);
    if (!closeEnough(got, want, t)) {
      ADD_FAILURE() << where << " element " << j << ": got " << got << " want " << want;
      ++bad;
    }
  }
  return req.value()->algorithm();
}

}  // namespace tsr::testing
