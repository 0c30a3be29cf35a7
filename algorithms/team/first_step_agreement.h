// A tensor's (or a COVAP handle's) settings checked across the ranks at its first step. Tensors are created on each
// rank alone (no collective), so nothing else compares what the ranks asked for, and many
// differences change no message size: Marsit's seed, momentum or scale block, a count inside the
// same 64-bit sign word, a top-k k under the same payload bound, op=sum on one rank and op=avg
// on another. Such ranks would exchange payloads that mean different things and end with
// different results, silently. So before its first step every rank all-gathers a short record
// of its tensor (count, op, the algorithm as resolved and the family's own settings, in the
// form its family writes: settingsText()), and the step goes on only where all records are
// equal; otherwise it fails on every rank with TSR_ERR_MISMATCH naming the keys and the ranks
// that differ. One all-gather of 256 bytes a rank per tensor, once. Names may differ (labels
// of each process: a replacement rank numbers its hooks' tensors apart), and so may where a
// tensor lives (memory=), since both paths send the same bytes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/plan/plan.h"
#include "algorithms/plan/task.h"
#include "algorithms/team/team.h"

namespace tsr::algorithms {

// One tensor's record and the all-gather that compares it, made with the tensor.
struct SettingsAgreement {
  std::string text;                  // "key=value; key=value; ...", the same order on every rank
  std::string rule;                  // what the mismatch's message asks for ("every rank must ...")
  std::atomic<bool> agreed{false};   // set once a first step found every rank's record equal
  std::shared_ptr<const Plan> plan;  // released, with `all`, once agreed
  int ranks = 0;
  std::vector<uint64_t> mine, all;  // this rank's record; every rank's, while comparing
};

// Sequence numbers an agreement takes in front of the step it guards.
inline constexpr uint32_t kAgreementSeqSpan = 1;

// The agreement of `text` on `team`; null on a team of one rank (nothing to compare). `rule`
// ends the mismatch's message: what every rank must do alike.
Result<std::shared_ptr<SettingsAgreement>> makeSettingsAgreement(Team& team, std::string text, std::string rule);

// `inner` (a tensor's step, its task taking the sequence numbers after the agreement's) built and
// started once the records agree; `what` names the tensor in messages ("marsit tensor w").
TaskFactory afterAgreement(TaskFactory inner, std::shared_ptr<SettingsAgreement> agreement, std::string what);

// The same, blocking, for a handle whose first step waits anyway (COVAP's first bucket): the
// all-gather, then Ok once agreed (at once when it already was), or the mismatch.
Status agreeNow(Team& team, SettingsAgreement& a, const std::string& what);

// The message for records that differ (rank order; records as their texts), or empty when
// they are all equal: each key whose value differs from rank 0's, with the ranks and values.
std::string describeDisagreement(const std::vector<std::string>& records);

}  // namespace tsr::algorithms
