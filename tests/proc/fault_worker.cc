// fault_worker: one rank of a process-based test job, started by tsrun from
// tests/process_test.cc. Every line it prints starts with "rank R:" so the test can read each
// rank's outcome from tsrun's output.
//
//   fault_worker full              every collective, dtype and op, in and out of place, checked
//   fault_worker barrier           one barrier (for tests of what creation leaves behind: logs)
//   fault_worker kill R [COUNT]    rank R SIGKILLs itself in the middle of a long allreduce (of
//                                  COUNT floats, 2^22 by default; 2: the shared-memory board)
//   fault_worker stop R [COUNT]    rank R SIGSTOPs itself likewise
//   fault_worker mismatch FIELD    rank 1 calls allreduce with a different count|dtype|op
//
// In the fault modes the other ranks report "rank R: FAILED after <ms> ms: <status>" and exit 3.
// They ignore SIGTERM, so tsrun's clean-up (SIGTERM, then SIGKILL after --grace) cannot cut
// their report short.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "runtime/communicator.h"
#include "tests/support/values.h"

using namespace tsr;
using runtime::Communicator;
using Clock = std::chrono::steady_clock;

int runFull(Communicator& comm);  // full_check.cc

namespace {


int reportFailure(int rank, Clock::time_point since, const Status& st) {
  long ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count();
  std::printf("rank %d: FAILED after %ld ms: %s\n", rank, ms, st.toString().c_str());
  std::fflush(stdout);
  return 3;
}

// Allreduces until `victim` kills or stops itself during one of them.
int runFault(Communicator& comm, int victim, int sig, size_t count) {
  std::vector<float> buf(count, 1.0f);
  auto since = Clock::now();
  for (int i = 0; i < 200; ++i) {
    auto req = comm.allreduce(buf.data(), buf.data(), count, DataType::kF32, ReduceOp::kAvg);
    if (!req.isOk()) return reportFailure(comm.rank(), since, req.status());
    if (comm.rank() == victim && i == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::printf("rank %d: raising %s mid-allreduce\n", comm.rank(), sig == SIGKILL ? "SIGKILL" : "SIGSTOP");
      std::fflush(stdout);
      raise(sig);
    }
    if (i == 2) since = Clock::now();  // the others' clock starts at the victim's fault
    Status st = req.value()->wait();
    if (!st.isOk()) return reportFailure(comm.rank(), since, st);
  }
  std::printf("rank %d: no failure seen\n", comm.rank());
  return 0;
}

int runMismatch(Communicator& comm, const std::string& field) {
  size_t count = 1000;
  DataType dtype = DataType::kF32;
  ReduceOp op = ReduceOp::kSum;
  if (comm.rank() == 1) {
    if (field == "count") count = 999;
    if (field == "dtype") dtype = DataType::kI32;
    if (field == "op") op = ReduceOp::kMax;
  }
  std::vector<char> in(count * 8), out(count * 8);
  auto since = Clock::now();
  auto req = comm.allreduce(in.data(), out.data(), count, dtype, op);
  Status st = req.isOk() ? req.value()->wait() : req.status();
  if (st.isOk()) {
    std::printf("rank %d: no mismatch reported\n", comm.rank());
    return 0;
  }
  return reportFailure(comm.rank(), since, st);
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "full";
  std::string arg = argc > 2 ? argv[2] : "";
  if (mode != "full" && mode != "barrier") signal(SIGTERM, SIG_IGN);
  auto created = Communicator::createFromEnvironment();
  if (!created.isOk()) {
    std::printf("rank ?: cannot create the communicator: %s\n", created.status().toString().c_str());
    return 2;
  }
  Communicator& comm = *created.value();
  if (mode == "full") return runFull(comm);
  if (mode == "barrier") {
    auto req = comm.barrier();
    Status st = req.isOk() ? req.value()->wait() : req.status();
    std::printf("rank %d: %s\n", comm.rank(), st.isOk() ? "OK barrier" : st.toString().c_str());
    return st.isOk() ? 0 : 1;
  }
  // 16 MiB of f32 by default: each allreduce takes a while.
  size_t count = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : size_t{1} << 22;
  if (mode == "kill") return runFault(comm, std::atoi(arg.c_str()), SIGKILL, count);
  if (mode == "stop") return runFault(comm, std::atoi(arg.c_str()), SIGSTOP, count);
  if (mode == "mismatch") return runMismatch(comm, arg);
  std::printf("rank %d: unknown mode %s\n", comm.rank(), mode.c_str());
  return 2;
}
