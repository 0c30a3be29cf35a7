// fault_worker: one rank of a process-based test job, started by tsrun from
// tests/process_test.cc. Every line it prints starts with "rank R:" so the test can read each
// rank's outcome from tsrun's output.
//
//   fault_worker full              every collective, dtype and op, in and out of place, checked
//   fault_worker barrier           one barrier (for tests of what creation leaves behind: logs)
//   fault_worker kill R [COUNT]    rank R SIGKILLs itself in the middle of a long allreduce (of
//                                  COUNT floats, 2^22 by default; 2: the shared-memory board)
//   fault_worker stop R [COUNT]    rank R SIGSTOPs itself likewise
//   fault_worker pause R [COUNT]   every rank raises its timeout to 20 s (setTimeout); rank R
//                                  stops itself for 3 s mid-allreduce (a child of its own wakes
//                                  it): every allreduce must complete ("rank R: OK ...")
//   fault_worker shrink R,.. [COUNT]  those ranks SIGKILL themselves likewise; the others shrink
//                                  the communicator and check the survivors' (shrink_check.cc)
//   fault_worker shrink-stop R,.. [COUNT]  they SIGSTOP themselves, are woken after the shrink
//                                  and must be refused by it
//   fault_worker shrink-cut R,.. [COUNT]  those ranks are cut off from outside; the others shrink
//   fault_worker shrink-slow R,.. [COUNT]  no failure: all shrink, those a second late (all stay)
//   fault_worker shrink-die A,B [COUNT]  A killed mid-allreduce, B during the shrink
//   fault_worker grow R [COUNT]    (tsrun --respawn 1) R SIGKILLs itself likewise, the others
//                                  shrink and grow again by its replacement (grow_check.cc)
//   fault_worker grow-vanish R [COUNT]  (tsrun --respawn 2) the same; the first replacement
//                                  vanishes after its welcome (grow_check.cc)
//   fault_worker grow-member-dies R [COUNT]  (tsrun --respawn 1) the same as grow; a survivor
//                                  dies instead of growing (grow_check.cc)
//   fault_worker hold              prints "rank R: up pid P" after a first allreduce, then small
//                                  allreduces for up to 120 s (for tsrun's end: the test kills it)
//   fault_worker mismatch FIELD    rank 1 calls allreduce with a different count|dtype|op
//   fault_worker repeat CASE REPS  REPS times a fresh communicator runs CASE, each rank checking
//                                  its outcome (prints "rank R: OK REPS reps" or what failed):
//     bcast-root        rank 0 broadcasts from root 0, the others from root 1: every rank must
//                       get the mismatch, and the next barrier must fail;
//     mismatch-destroy  rank 1 allreduces 1000004 floats, the others 1000003: every rank must
//                       get the mismatch and destroys its communicator at once;
//     then-mismatch     a correct 16-float allreduce, then at once a mismatched one: the first
//                       must succeed on every rank, the second fail with the mismatch.
//   With FAULT_HOST_PER_RANK=1 each rank acts as its own host (TSR_TEST_HOST_ID).
//
// In the fault modes the other ranks report "rank R: FAILED after <ms> ms: <status>" and exit 3.
// They ignore SIGTERM, so tsrun's clean-up (SIGTERM, then SIGKILL after --grace) cannot cut
// their report short.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "runtime/communicator.h"
#include "tests/proc/shrink_check.h"
#include "tests/proc/worker_report.h"
#include "tests/support/values.h"

using namespace tsr;
using runtime::Communicator;
using Clock = std::chrono::steady_clock;

int runFull(Communicator& comm);                                             // full_check.cc
int runJoin(GrowFault fault);                                                // grow_check.cc
int runGrow(Communicator& comm, int victim, size_t count, GrowFault fault);  // grow_check.cc

namespace {

int reportFailure(int rank, Clock::time_point since, const Status& st) {
  long ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count();
  std::printf("rank %d: FAILED after %ld ms: %s\n", rank, ms, st.toString().c_str());
  std::fflush(stdout);
  return 3;
}

int runHold(Communicator& comm) {
  std::vector<float> buf(1024, 1.0f);
  auto until = Clock::now() + std::chrono::seconds(120);
  for (int i = 0; Clock::now() < until; ++i) {
    auto req = comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::kF32, ReduceOp::kAvg);
    Status st = req.isOk() ? req.value()->wait() : req.status();
    if (!st.isOk()) return reportFailure(comm.rank(), until, st);
    if (i == 0) {
      std::printf("rank %d: up pid %d\n", comm.rank(), static_cast<int>(getpid()));
      std::fflush(stdout);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
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

// Rank `victim` stops itself for 3 s in the middle of an allreduce, after every rank raised
// its timeout past that: the others wait for it, and every allreduce ends right.
int runPause(Communicator& comm, int victim, size_t count) {
  auto since = Clock::now();
  if (Status st = comm.setTimeout(20000); !st.isOk()) return reportFailure(comm.rank(), since, st);
  std::vector<float> buf(count, 1.0f);
  for (int i = 0; i < 10; ++i) {
    auto req = comm.allreduce(buf.data(), buf.data(), count, DataType::kF32, ReduceOp::kAvg);
    if (!req.isOk()) return reportFailure(comm.rank(), since, req.status());
    if (comm.rank() == victim && i == 2) {
      std::printf("rank %d: stopping itself for 3 s mid-allreduce\n", comm.rank());
      std::fflush(stdout);
      pid_t waker = fork();
      if (waker == 0) {  // only async-signal-safe calls in the child of a threaded process
        sleep(3);
        kill(getppid(), SIGCONT);
        _exit(0);
      }
      raise(SIGSTOP);
      waitpid(waker, nullptr, 0);
    }
    Status st = req.value()->wait();
    if (!st.isOk()) return reportFailure(comm.rank(), since, st);
    if (buf[0] != 1.0f) {
      std::printf("rank %d: allreduce %d gave %g, not 1\n", comm.rank(), i, static_cast<double>(buf[0]));
      return 3;
    }
  }
  long ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count();
  std::printf("rank %d: OK after %ld ms\n", comm.rank(), ms);
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

Status waitFor(Result<runtime::RequestPtr> req) { return req.isOk() ? req.value()->wait() : req.status(); }

// One repetition of `what` on a fresh communicator: "" when it went as it must, else what did not.
std::string repeatOnce(const std::string& what) {
  auto created = Communicator::createFromEnvironment();
  if (!created.isOk()) return "cannot create the communicator: " + created.status().toString();
  Communicator& comm = *created.value();
  const int r = comm.rank();
  auto mismatchNamed = [](const Status& st, const char* field) {
    return st.code() == Code::kMismatch && st.message().find(std::string(field) + " differs") != std::string::npos;
  };
  if (what == "bcast-root") {
    std::vector<float> buf(1000, static_cast<float>(r));
    Status st = waitFor(comm.broadcast(buf.data(), buf.data(), buf.size(), DataType::kF32, r == 0 ? 0 : 1));
    if (!mismatchNamed(st, "root")) return "broadcast: " + st.toString();
    Status next = waitFor(comm.barrier());
    if (next.isOk()) return "the barrier after the mismatch succeeded";
    return "";
  }
  if (what == "mismatch-destroy") {
    const size_t count = r == 1 ? 1000004 : 1000003;
    std::vector<float> buf(count, 1.0f);
    Status st = waitFor(comm.allreduce(buf.data(), buf.data(), count, DataType::kF32, ReduceOp::kSum));
    created.value().reset();  // at once, while peers may still be sending their notices
    if (!mismatchNamed(st, "count")) return "allreduce: " + st.toString();
    return "";
  }
  if (what == "then-mismatch") {
    std::vector<float> a(16, 1.0f), b(17, 1.0f);
    Status first = waitFor(comm.allreduce(a.data(), a.data(), 16, DataType::kF32, ReduceOp::kSum));
    Status second = waitFor(comm.allreduce(b.data(), b.data(), r == 1 ? 17 : 16, DataType::kF32, ReduceOp::kSum));
    if (!first.isOk()) return "the correct allreduce failed: " + first.toString();
    if (a[0] != static_cast<float>(comm.size())) return "the correct allreduce gave " + std::to_string(a[0]);
    if (!mismatchNamed(second, "count")) return "the mismatched allreduce: " + second.toString();
    return "";
  }
  return "unknown case " + what;
}

int runRepeat(const std::string& what, int reps) {
  const char* rank = std::getenv("TSR_RANK");
  for (int i = 0; i < reps; ++i) {
    std::string wrong = repeatOnce(what);
    if (!wrong.empty()) {
      std::printf("rank %s: FAILED in repetition %d of %s: %s\n", rank ? rank : "?", i, what.c_str(), wrong.c_str());
      std::fflush(stdout);
      return 3;
    }
  }
  std::printf("rank %s: OK %d reps of %s\n", rank ? rank : "?", reps, what.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "full";
  std::string arg = argc > 2 ? argv[2] : "";
  if (mode != "full" && mode != "barrier") signal(SIGTERM, SIG_IGN);
  const char* hostPerRank = std::getenv("FAULT_HOST_PER_RANK");
  const char* rankText = std::getenv("TSR_RANK");
  if (hostPerRank && std::string(hostPerRank) == "1" && rankText)
    setenv("TSR_TEST_HOST_ID", (std::string("h") + rankText).c_str(), 1);
  if (mode == "repeat") return runRepeat(arg, argc > 3 ? std::atoi(argv[3]) : 1);
  const char* join = std::getenv("TSR_JOIN");
  const GrowFault growFault = mode == "grow-vanish"        ? GrowFault::kReplacementVanishes
                              : mode == "grow-member-dies" ? GrowFault::kMemberDies
                                                           : GrowFault::kNone;
  const bool growing = mode == "grow" || growFault != GrowFault::kNone;
  if (growing && join && std::string(join) == "1") return runJoin(growFault);
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
  if (mode == "pause") return runPause(comm, std::atoi(arg.c_str()), count);
  if (mode == "mismatch") return runMismatch(comm, arg);
  if (mode == "shrink") return runShrink(comm, arg, count, Fault::kKill);
  if (mode == "shrink-stop") return runShrink(comm, arg, count, Fault::kStop);
  if (mode == "shrink-cut") return runShrink(comm, arg, count, Fault::kCut);
  if (mode == "shrink-slow") return runShrink(comm, arg, count, Fault::kSlow);
  if (mode == "shrink-die") return runShrink(comm, arg, count, Fault::kDieDuring);
  if (growing) return runGrow(comm, std::atoi(arg.c_str()), count, growFault);
  if (mode == "hold") return runHold(comm);
  std::printf("rank %d: unknown mode %s\n", comm.rank(), mode.c_str());
  return 2;
}
