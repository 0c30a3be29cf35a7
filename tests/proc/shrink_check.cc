// fault_worker shrink VICTIMS [COUNT]: the ranks in VICTIMS (comma-separated) SIGKILL themselves
// in the middle of a long allreduce; every other rank, once its allreduce fails, calls
// Communicator::shrink and checks the new communicator: its size and rank (the survivors in
// their old order), an allreduce of every survivor's old rank + 1 (exact), and an allgather of
// the old ranks (the order). Prints "rank R: SHRUNK to rank r of n in T ms (...)" or
// "rank R: FAILED ...".
// fault_worker shrink-stop VICTIMS [COUNT]: the victims SIGSTOP themselves instead; once the
// survivors have shrunk and checked, the first wakes them (SIGCONT), and each victim, whose
// call then fails, calls shrink too: it must be refused, never admitted with its stale state.
// fault_worker shrink-cut LOST [COUNT]: nobody raises anything; the ranks in LOST are to be cut
// off from outside (tests/cluster_shrink_check.sh takes their hosts' links down); the others
// must shrink to the rest, and the cut-off ranks' shrink must fail (not a majority).
// FAULT_TENSOR=marsit|spardl|...|covap|selsync: the long allreduces are steps of a tensor of
// that algorithm, or of a COVAP or SelSync handle; after the shrink the survivors move it to
// the new communicator with its state and check it (tests/proc/fault_steps.h).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/proc/fault_steps.h"
#include "tests/proc/shrink_check.h"
#include "tests/proc/worker_report.h"

using namespace tsr;
using runtime::Communicator;
using Clock = std::chrono::steady_clock;

int runShrink(Communicator& comm, const std::string& victimList, size_t count, Fault fault) {
  const bool stop = fault == Fault::kStop;
  std::vector<int> victims;
  std::stringstream in(victimList);
  for (std::string v; std::getline(in, v, ',');) victims.push_back(std::stoi(v));
  const int rank = comm.rank(), size = comm.size();
  const bool victim = std::find(victims.begin(), victims.end(), rank) != victims.end();
  // kDieDuring: the first victim dies mid-allreduce, the second during the shrink.
  const bool diesMidAllreduce = victim && (fault != Fault::kDieDuring || rank == victims.front());
  std::vector<int64_t> pids(size), myPid{static_cast<int64_t>(getpid())};
  if (Status s = wait(comm.allgather(myPid.data(), pids.data(), 1, DataType::kI64)); !s.isOk())
    return failed(rank, "to share the pids", s);
  if (fault == Fault::kCut) {  // the cue for the test to cut the links
    std::printf("rank %d: up and allreducing\n", rank);
    std::fflush(stdout);
  }
  auto made = makeFaultSteps(comm, count);
  if (!made.isOk()) return failed(rank, "to make what the steps run", made.status());
  FaultSteps& steps = *made.value();
  bool midwayRan = false;
  const std::function<void()> midway = [&] {
    if (!diesMidAllreduce || fault == Fault::kCut || fault == Fault::kSlow) return;
    midwayRan = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::printf("rank %d: raising %s mid-allreduce\n", rank, stop ? "SIGSTOP" : "SIGKILL");
    std::fflush(stdout);
    raise(stop ? SIGSTOP : SIGKILL);
  };
  Status st;
  Clock::time_point since;
  for (int i = 0; i < 200 && st.isOk(); ++i) {
    if (fault == Fault::kSlow && i == 3) break;  // no failure: every rank shrinks now
    const std::function<void()> nothing = [] {};
    auto waitForStep = steps.post(i, i == 2 ? midway : nothing);
    if (i == 2) since = Clock::now();
    st = waitForStep();
  }
  if (st.isOk() && fault != Fault::kSlow)
    return failed(rank, "to see the failure", Status(Code::kInternal, "no failure seen"));
  // A victim still in an earlier step when another victim died (a loaded machine lags it by
  // more than the 2 ms) sees that failure first: it dies now, as the scenario has it.
  if (!midwayRan) midway();
  const double detectMs = std::chrono::duration<double, std::milli>(Clock::now() - since).count();
  if (fault == Fault::kSlow && victim) std::this_thread::sleep_for(std::chrono::seconds(1));
  if (fault == Fault::kDieDuring && victim && !diesMidAllreduce)
    std::thread([] {  // dies while its shrink agrees with the others
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      raise(SIGKILL);
    })
        .detach();
  auto shrunk = comm.shrink();
  if (victim && fault != Fault::kSlow && shrunk.isOk())
    return failed(rank, "to stay out",
                  Status(Code::kInternal, "a stopped or cut-off rank was admitted to the survivors"));
  if (!shrunk.isOk()) return failed(rank, "to shrink", shrunk.status());
  Communicator& next = *shrunk.value();
  const double shrinkMs = std::chrono::duration<double, std::milli>(Clock::now() - since).count() - detectMs;
  std::vector<int> survivors;
  for (int r = 0; r < size; ++r)
    if (fault == Fault::kSlow || std::find(victims.begin(), victims.end(), r) == victims.end()) survivors.push_back(r);
  const int want = static_cast<int>(std::find(survivors.begin(), survivors.end(), rank) - survivors.begin());
  if (next.size() != static_cast<int>(survivors.size()) || next.rank() != want)
    return failed(
        rank, "ranking",
        Status(Code::kInternal, "rank " + std::to_string(next.rank()) + " of " + std::to_string(next.size()) +
                                    ", want " + std::to_string(want) + " of " + std::to_string(survivors.size())));
  int64_t sum = 0;
  for (int r : survivors) sum += r + 1;
  for (size_t n : {size_t{1000}, count}) {
    std::vector<float> x(n, static_cast<float>(rank + 1));
    if (Status s = wait(next.allreduce(x.data(), x.data(), n, DataType::kF32, ReduceOp::kSum)); !s.isOk())
      return failed(rank, "allreduce after the shrink", s);
    if (x.front() != static_cast<float>(sum) || x.back() != static_cast<float>(sum))
      return failed(rank, "allreduce after the shrink",
                    Status(Code::kInternal, std::to_string(x.back()) + " where " + std::to_string(sum)));
  }
  std::vector<int32_t> mine{rank}, all(survivors.size(), -1);
  if (Status s = wait(next.allgather(mine.data(), all.data(), 1, DataType::kI32)); !s.isOk())
    return failed(rank, "allgather after the shrink", s);
  if (!std::equal(all.begin(), all.end(), survivors.begin()))
    return failed(rank, "allgather after the shrink", Status(Code::kInternal, "the old ranks out of order"));
  if (std::string wrong = steps.moveAndCheck(next); !wrong.empty())
    return failed(rank, "the moved state", Status(Code::kInternal, wrong));
  std::printf("rank %d: SHRUNK to rank %d of %d in %.0f ms (failure seen after %.0f ms); allreduce exact%s\n", rank,
              next.rank(), next.size(), shrinkMs, detectMs, steps.movedLine().c_str());
  std::fflush(stdout);
  if (stop && next.rank() == 0)
    for (int v : victims) kill(static_cast<pid_t>(pids[v]), SIGCONT);
  // A woken victim's shrink still finds this rank's old communicator (it is kept until exit):
  // stay a moment so that it is this rank's answer, not its absence, that shuts it out.
  if (stop) std::this_thread::sleep_for(std::chrono::seconds(2));
  return 0;
}
