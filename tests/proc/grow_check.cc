// fault_worker grow VICTIM [COUNT] (under tsrun --respawn 1): the victim SIGKILLs itself in the
// middle of a long allreduce; the others shrink (a grow of the old communicator is refused),
// then call Communicator::grow every 20 ms until the replacement tsrun started (the same rank
// again, TSR_JOIN=1: joinFromEnvironment) is let in. Every rank of the grown communicator checks it: the size, its rank
// (members first, in order, the replacement last), an exact allreduce, an allgather of the first-launch ranks in order,
// and one more grow that finds nobody waiting (the replacement's own door included). Prints "rank R: GREW to rank r of
// n ..." or "rank R: JOINED as rank r of n ..." or "rank R: FAILED ...".
//
// fault_worker grow-vanish VICTIM [COUNT] (under tsrun --respawn 2): the same, but the first
// replacement vanishes once it has its welcome, before the grown communicator's bootstrap (it
// asks with a port nobody listens at, then exits). The members' grow that let it in fails
// within the timeout; the survivors' communicator stays usable (an exact allreduce) and a later
// grow lets in the second replacement tsrun starts. The members print "(1 failed grow: ...)".
//
// fault_worker grow-member-dies VICTIM [COUNT] (under tsrun --respawn 1): the same as grow, but
// 1.5 s after the shrink the last survivor dies instead of calling grow, while the others wait
// in theirs: their grow fails naming it, they shrink again and grow on, and the replacement,
// waiting at a door all along, comes in (a grown communicator of 3).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "runtime/bootstrap/join_link.h"
#include "runtime/bootstrap/launch_env.h"
#include "runtime/communicator.h"
#include "runtime/config.h"
#include "tests/proc/worker_report.h"

using namespace tsr;
using runtime::Communicator;
using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// The grown communicator, on every rank: `launchRank` is the rank's first-launch rank,
// `expected` every rank's, in the grown order.
std::string checkGrown(Communicator& grown, int launchRank, const std::vector<int32_t>& expected) {
  const int n = grown.size();
  if (n != static_cast<int>(expected.size()))
    return "size " + std::to_string(n) + ", want " + std::to_string(expected.size());
  if (expected[grown.rank()] != launchRank) return "ranked " + std::to_string(grown.rank()) + ", out of order";
  std::vector<float> x(100000, static_cast<float>(grown.rank() + 1));
  if (Status s = wait(grown.allreduce(x.data(), x.data(), x.size(), DataType::kF32, ReduceOp::kSum)); !s.isOk())
    return "allreduce: " + s.toString();
  const float sum = static_cast<float>(n * (n + 1) / 2);
  if (x.front() != sum || x.back() != sum) return "allreduce gave " + std::to_string(x.back());
  std::vector<int32_t> mine{launchRank}, all(n, -1);
  if (Status s = wait(grown.allgather(mine.data(), all.data(), 1, DataType::kI32)); !s.isOk())
    return "allgather: " + s.toString();
  if (all != expected) return "the first-launch ranks out of order";
  auto again = grown.grow();
  if (!again.isOk()) return "the next grow: " + again.status().toString();
  if (again.value()) return "the next grow grew with nobody waiting";
  return "";
}

}  // namespace

// The first replacement of a grow-vanish job: it asks to join as Communicator::join does, but
// names a port nobody listens at and exits once welcomed. A file beside the job's temporary
// files tells the second replacement to join for real.
int vanishAfterTheWelcome(int launchRank, const std::string& marker) {
  using namespace runtime;
  auto launch = launchInfoFromEnv(processEnvironment());
  if (!launch.isOk()) return failed(launchRank, "to read the launch", launch.status());
  auto key = joinKey(launch.value().secret, launch.value().jobId);
  if (!key.isOk()) return failed(launchRank, "to derive the join key", key.status());
  std::vector<PeerAddress> members;
  for (int r = 0; r < launch.value().size; ++r)
    if (r != launchRank) members.push_back(launch.value().peers[r]);
  const JoinRequest unanswered{launch.value().peers[launchRank].host, /*port=*/1, "vanishing"};
  auto welcome = requestToJoin(members, {std::string(asView(key.value())), launch.value().jobId}, unanswered, 30000);
  if (!welcome.isOk()) return failed(launchRank, "to be welcomed", welcome.status());
  if (std::FILE* f = std::fopen(marker.c_str(), "w")) std::fclose(f);
  std::printf("rank %d: VANISHED after the welcome of %s\n", launchRank, welcome.value().from.c_str());
  std::fflush(stdout);
  return 4;
}

int runJoin(GrowFault fault) {
  const bool vanishFirst = fault == GrowFault::kReplacementVanishes;
  const int launchRank = std::atoi(std::getenv("TSR_RANK") ? std::getenv("TSR_RANK") : "-1");
  const char* job = std::getenv("TSR_JOB_ID");
  const std::string marker = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                             "/fault_worker-vanished-" + (job ? job : "job");
  if (vanishFirst) {
    std::FILE* seen = std::fopen(marker.c_str(), "r");
    if (!seen) return vanishAfterTheWelcome(launchRank, marker);
    std::fclose(seen);
    std::remove(marker.c_str());
  }
  const auto started = Clock::now();
  auto joined = Communicator::joinFromEnvironment();
  if (!joined.isOk()) return failed(launchRank, "to join", joined.status());
  Communicator& comm = *joined.value();
  const double ms = msSince(started);
  std::vector<int32_t> expected;
  for (int r = 0; r < comm.size(); ++r)
    if (r != launchRank) expected.push_back(r);
  expected.push_back(launchRank);
  std::string wrong = checkGrown(comm, launchRank, expected);
  if (!wrong.empty()) return failed(launchRank, "after joining", Status(Code::kInternal, wrong));
  std::printf("rank %d: JOINED as rank %d of %d in %.0f ms; allreduce exact\n", launchRank, comm.rank(), comm.size(),
              ms);
  std::fflush(stdout);
  return 0;
}

int runGrow(Communicator& comm, int victim, size_t count, GrowFault fault) {
  const int rank = comm.rank(), size = comm.size();
  // grow-member-dies: the last survivor dies instead of calling its first grow, while the others
  // wait in theirs (a grow is a collective) and the replacement at a door.
  const int dying = fault == GrowFault::kMemberDies ? (victim == size - 1 ? size - 2 : size - 1) : -1;
  std::vector<float> buf(count, 1.0f);
  Status st;
  for (int i = 0; i < 200 && st.isOk(); ++i) {
    auto req = comm.allreduce(buf.data(), buf.data(), count, DataType::kF32, ReduceOp::kAvg);
    if (rank == victim && i == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::printf("rank %d: raising SIGKILL mid-allreduce\n", rank);
      std::fflush(stdout);
      raise(SIGKILL);
    }
    st = wait(std::move(req));
  }
  if (st.isOk()) return failed(rank, "to see the failure", Status(Code::kInternal, "no failure seen"));
  auto shrunk = comm.shrink();
  if (!shrunk.isOk()) return failed(rank, "to shrink", shrunk.status());
  // The communicator the shrink replaced grows nothing, and refuses before it opens the door
  // that the survivors' communicator is to open (else that one's port would be taken).
  if (comm.grow().isOk())
    return failed(rank, "to refuse a grow of the shrunk communicator", Status(Code::kInternal, "it grew"));
  std::unique_ptr<Communicator> members = shrunk.take();
  const auto shrunkAt = Clock::now();
  std::unique_ptr<Communicator> grown;
  int calls = 0;
  std::string failedGrow;
  // grow-member-dies: nobody grows for 1.5 s, so the replacement is at a door when one dies.
  if (fault == GrowFault::kMemberDies) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  while (!grown && msSince(shrunkAt) < 60000) {
    ++calls;
    if (rank == dying) {
      std::printf("rank %d: raising SIGKILL instead of growing\n", rank);
      std::fflush(stdout);
      raise(SIGKILL);
    }
    const auto asked = Clock::now();
    auto g = members->grow();
    if (!g.isOk() && fault != GrowFault::kNone && failedGrow.empty()) {
      failedGrow = std::to_string(static_cast<int>(msSince(asked))) + " ms: " + g.status().toString();
      if (fault == GrowFault::kMemberDies) {  // a member is lost: shrink again, then grow on
        auto again = members->shrink();
        if (!again.isOk()) return failed(rank, "to shrink after the failed grow", again.status());
        members = again.take();
      }
      // Whichever communicator the members now have, it is usable: an exact allreduce.
      std::vector<float> x(1000, 1.0f);
      Status s = wait(members->allreduce(x.data(), x.data(), x.size(), DataType::kF32, ReduceOp::kSum));
      if (!s.isOk() || x.back() != static_cast<float>(members->size()))
        return failed(rank, "to allreduce after the failed grow", s.isOk() ? Status(Code::kInternal, "inexact") : s);
      continue;
    }
    if (!g.isOk()) return failed(rank, "to grow", g.status());
    grown = g.take();
    if (!grown) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!grown) return failed(rank, "to grow", Status(Code::kTimeout, "no replacement within 60 s"));
  if (fault != GrowFault::kNone && failedGrow.empty())
    return failed(rank, "to see a grow fail", Status(Code::kInternal, "every grow succeeded"));
  const double ms = msSince(shrunkAt);
  std::vector<int32_t> expected;
  for (int r = 0; r < size; ++r)
    if (r != victim && r != dying) expected.push_back(r);
  expected.push_back(victim);
  std::string wrong = checkGrown(*grown, rank, expected);
  if (!wrong.empty()) return failed(rank, "after growing", Status(Code::kInternal, wrong));
  std::printf("rank %d: GREW to rank %d of %d, %.0f ms after the shrink (%d grow calls); allreduce exact%s\n", rank,
              grown->rank(), grown->size(), ms, calls,
              failedGrow.empty() ? "" : (" (1 failed grow: " + failedGrow + ")").c_str());
  std::fflush(stdout);
  return 0;
}
