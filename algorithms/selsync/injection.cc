// Data injection as a plan of point-to-point transfers (see injection.h).
#include "algorithms/selsync/injection.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "algorithms/selsync/selsync_logic.h"
#include "algorithms/team/first_step_agreement.h"

namespace tsr::selsync {

using algorithms::OpKind;
using algorithms::Plan;
using algorithms::Slot;

namespace {

// The most floats a share may hold: the communicator's limit on a count (2^40).
constexpr size_t kMaxShareCount = size_t{1} << 40;

// This rank's buffers against what the draw asks of it: a share to send, room for the others'.
Status checkBuffers(int me, uint64_t step, const Injection& out, bool sending, const float* share, size_t shareCount,
                    const float* received, size_t capacity) {
  if (shareCount > kMaxShareCount)  // (senders x shareCount and the bytes would wrap)
    return Status(Code::kInvalidArgument, "data injection on rank " + std::to_string(me) + ": share count " +
                                              std::to_string(shareCount) +
                                              " is too large (at most 2^40; a negative number cast to size_t?)");
  if (shareCount > 0 && sending && !share)
    return Status(Code::kInvalidArgument, "data injection on rank " + std::to_string(me) +
                                              ": this rank sends at step " + std::to_string(step) +
                                              " but its share is NULL");
  if (capacity < out.receivedCount || (out.receivedCount > 0 && !received))
    return Status(Code::kInvalidArgument,
                  "data injection on rank " + std::to_string(me) + " at step " + std::to_string(step) +
                      ": received holds " + std::to_string(received ? capacity : 0) + " floats, " +
                      std::to_string(out.receivedCount) + " are coming (" +
                      std::to_string(out.receivedCount / std::max<size_t>(shareCount, 1)) + " senders other than " +
                      "this rank x " + std::to_string(shareCount) + ")");
  return Status::ok();
}

}  // namespace

Result<Injection> injectData(algorithms::Team& comm, uint64_t seed, uint64_t step, double alpha, const float* share,
                             size_t shareCount, float* received, size_t capacity) {
  const int me = comm.rank(), n = comm.size();
  const bool alphaOk = alpha >= 0.0 && alpha <= 1.0;
  Injection out;
  bool sending = false;
  Status buffers = Status::ok();
  if (alphaOk) {
    out.senders = injectionRanks(seed, step, n, alpha);
    sending = std::binary_search(out.senders.begin(), out.senders.end(), me);
    if (shareCount <= kMaxShareCount) out.receivedCount = (out.senders.size() - (sending ? 1 : 0)) * shareCount;
    buffers = checkBuffers(me, step, out, sending, share, shareCount, received, capacity);
  }
  // Ranks that differ in seed, step or alpha draw different senders and would pass each other
  // by without an error (a sender's messages unreceived, a receiver's share never sent): the
  // call's settings are compared first, as a tensor's first step compares its own. So is
  // whether this rank's buffers fit the draw: a rank that cannot take part fails every rank's
  // call, not its own alone while the others wait out the timeout.
  char alphaText[32];
  std::snprintf(alphaText, sizeof(alphaText), "%.17g", alpha);
  TSR_ASSIGN_OR_RETURN(auto agreement, algorithms::makeSettingsAgreement(
                                           comm,
                                           "seed=" + std::to_string(seed) + "; step=" + std::to_string(step) +
                                               "; alpha=" + alphaText + "; share count=" + std::to_string(shareCount) +
                                               "; buffers=" + (buffers.isOk() ? "fit" : "refused (see that rank)"),
                                           "every rank must inject with the same seed, step, alpha and share size, "
                                           "into buffers that fit"));
  if (agreement) {
    Status agreed = algorithms::agreeNow(comm, *agreement, "data injection");
    if (!agreed.isOk()) return buffers.isOk() ? agreed : buffers;
  }
  // After the comparison: a bad alpha on one rank is then a mismatch every rank hears of.
  if (!alphaOk)
    return Status(Code::kInvalidArgument, "data injection on rank " + std::to_string(me) +
                                              ": alpha=" + std::to_string(alpha) + " is outside [0, 1]");
  TSR_RETURN_IF_ERROR(buffers);
  auto plan = std::make_shared<Plan>();
  plan->algorithm = "selsync-injection";
  plan->collective = algorithms::CollectiveKind::kAllgather;
  plan->dtype = DataType::kF32;
  plan->count = shareCount;
  if (shareCount > 0) {
    size_t slot = 0;
    for (int s : out.senders) {
      if (s == me) {
        for (int peer = 0; peer < n; ++peer)
          if (peer != me)
            plan->add({.kind = OpKind::kSend, .peer = peer, .msgId = 0, .src = {Slot::kInput, 0}, .count = shareCount});
      } else {
        plan->add({.kind = OpKind::kRecv,
                   .peer = s,
                   .msgId = 0,
                   .dst = {Slot::kOutput, slot++ * shareCount * sizeof(float)},
                   .count = shareCount});
      }
    }
  }
  TSR_RETURN_IF_ERROR(plan->finalize());
  TSR_ASSIGN_OR_RETURN(auto request, comm.submitPlan(std::move(plan), share, received));
  TSR_RETURN_IF_ERROR(request->wait());
  return out;
}

}  // namespace tsr::selsync
