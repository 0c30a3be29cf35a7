// Splitting on PyTorch 2.x: torch.distributed.split_group (and ProcessGroup.split_group) asks
// the parent's backend for each new group, on every rank of the parent, each passing the
// sorted ranks of its own group, or of the first group when it is in none. One
// tsr_comm_split serves it: a member's color is its group's lowest rank, its key its place
// in the group (so Tessera's ranks are torch's); a rank outside the group takes no color.
// Nothing goes through torch's store: the members' addresses travel through the parent, and
// the new communicator's secret derives from the parent's.
//
// Shrinking and growing (both versions): after a failure every live rank asks for the
// survivors' group (tessera.torch.elastic), which tsr_comm_shrink makes; between steps the
// members ask for the group grown by the replacements waiting (tsr_comm_grow), which a
// replacement's tsr_comm_join meets.
#include <algorithm>

#include <c10/util/Exception.h>

#include "bindings/torch/process_group_tessera.h"

#if TORCH_VERSION_MAJOR >= 2
namespace tessera_torch {

c10::intrusive_ptr<c10d::Backend::Options> ProcessGroupTessera::getBackendOptions() {
  std::lock_guard<std::mutex> lock(postMutex_);
  return c10::make_intrusive<Options>(getBackendName(), std::chrono::milliseconds(defaultTimeoutMs_));
}

// ProcessGroup::splitGroup calls split once per device type, with one PrefixStore made for
// the call: registered for the CPU and CUDA, this backend is asked twice and the second ask
// gets the first's group. Every other call splits (the group name cannot tell calls apart: a
// rank in no group gets the same name each time, while the members' calls go on).
c10::intrusive_ptr<Baseclass> ProcessGroupTessera::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                         const std::vector<int>& ranks,
                                                         const c10::intrusive_ptr<Options>& opts) {
  if (store && store == lastSplitStore_ && ranks == lastSplitRanks_) return lastSplit_;
  TORCH_CHECK(!ranks.empty(), "tessera: split: no ranks");
  for (int r : ranks)
    TORCH_CHECK(r >= 0 && r < getSize(), "tessera: split: rank ", r, " is not in this group of ", getSize(), " ranks");
  const auto me = std::find(ranks.begin(), ranks.end(), getRank());
  const bool member = me != ranks.end();
  const int color = member ? *std::min_element(ranks.begin(), ranks.end()) : TSR_COMM_SPLIT_NOCOLOR;
  const int key = member ? static_cast<int>(me - ranks.begin()) : 0;
  tsr_comm_t sub = nullptr;
  tsr_status_t st = tsr_comm_split(comm_, color, key, &sub);
  TORCH_CHECK(st == TSR_OK, "tessera: split into ranks ", c10::Join(",", ranks), " on rank ", getRank(), " (",
              tsr_status_string(st), "): ", tsr_last_error());
  c10::intrusive_ptr<Baseclass> made;
  if (sub) {
    int rank = -1, size = -1;
    tsr_comm_rank(sub, &rank);
    tsr_comm_size(sub, &size);
    auto group = c10::make_intrusive<ProcessGroupTessera>(sub, rank, size);
    if (opts && opts->timeout.count() > 0) group->setTimeout(opts->timeout);
    made = group;
  }
  lastSplitStore_ = store;
  lastSplitRanks_ = ranks;
  lastSplit_ = made;
  return made;
}

}  // namespace tessera_torch
#endif

namespace tessera_torch {

c10::intrusive_ptr<ProcessGroupTessera> ProcessGroupTessera::shrink() {
  tsr_comm_t survivors = nullptr;
  tsr_status_t st = tsr_comm_shrink(comm_, &survivors);
  TORCH_CHECK(st == TSR_OK, "tessera: shrink on rank ", getRank(), " (", tsr_status_string(st),
              "): ", tsr_last_error());
  int rank = -1, size = -1;
  tsr_comm_rank(survivors, &rank);
  tsr_comm_size(survivors, &size);
  auto group = c10::make_intrusive<ProcessGroupTessera>(survivors, rank, size);
  std::lock_guard<std::mutex> lock(postMutex_);
  tsr_comm_set_timeout(survivors, static_cast<int>(defaultTimeoutMs_));
  group->defaultTimeoutMs_ = group->postedTimeoutMs_ = defaultTimeoutMs_;
  return group;
}

c10::intrusive_ptr<ProcessGroupTessera> ProcessGroupTessera::grow() {
  tsr_comm_t grown = nullptr;
  tsr_status_t st = tsr_comm_grow(comm_, &grown);
  TORCH_CHECK(st == TSR_OK, "tessera: grow on rank ", getRank(), " (", tsr_status_string(st), "): ", tsr_last_error());
  if (!grown) return {};
  int rank = -1, size = -1;
  tsr_comm_rank(grown, &rank);
  tsr_comm_size(grown, &size);
  auto group = c10::make_intrusive<ProcessGroupTessera>(grown, rank, size);
  std::lock_guard<std::mutex> lock(postMutex_);
  group->defaultTimeoutMs_ = group->postedTimeoutMs_ = defaultTimeoutMs_;
  return group;
}

c10::intrusive_ptr<ProcessGroupTessera> ProcessGroupTessera::join() {
  tsr_comm_t joined = nullptr;
  tsr_status_t st = tsr_comm_join(&joined);
  TORCH_CHECK(st == TSR_OK, "tessera: join (", tsr_status_string(st), "): ", tsr_last_error());
  int rank = -1, size = -1, timeoutMs = 0;
  tsr_comm_rank(joined, &rank);
  tsr_comm_size(joined, &size);
  tsr_comm_timeout(joined, &timeoutMs);  // the members' (the welcome carries it)
  auto group = c10::make_intrusive<ProcessGroupTessera>(joined, rank, size);
  group->defaultTimeoutMs_ = group->postedTimeoutMs_ = timeoutMs;
  return group;
}

}  // namespace tessera_torch
