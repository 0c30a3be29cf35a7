#include "algorithms/team/first_step_agreement.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "algorithms/dense/dense_plans.h"
#include "algorithms/plan/executor.h"

namespace tsr::algorithms {
namespace {

// A record: the text's FNV-1a hash, its length, then its first kTextBytes bytes (zero padded).
constexpr size_t kRecordWords = 32;
constexpr size_t kTextBytes = (kRecordWords - 2) * 8;

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::string recordText(const uint64_t* record) {
  const char* bytes = reinterpret_cast<const char*>(record + 2);
  return std::string(bytes, strnlen(bytes, kTextBytes));
}

// Every rank's record as gathered in a.all: equal, or the mismatch naming what differs. Sets
// a.agreed when equal.
Status verdict(SettingsAgreement& a, const std::string& what) {
  const size_t size = a.all.size() / kRecordWords;
  bool equal = true;
  for (size_t r = 0; r < size && equal; ++r)
    equal = std::memcmp(a.all.data() + r * kRecordWords, a.all.data(), kRecordWords * 8) == 0;
  if (equal) {
    // Kept no longer: a job of thousands of ranks with hundreds of tensors would hold megabytes.
    a.agreed = true;
    std::vector<uint64_t>().swap(a.all);
    a.plan.reset();
    return Status::ok();
  }
  std::vector<std::string> texts;
  for (size_t r = 0; r < size; ++r) texts.push_back(recordText(a.all.data() + r * kRecordWords));
  std::string why = describeDisagreement(texts);
  if (why.empty())
    why =
        "the ranks' settings differ past their first " + std::to_string(kTextBytes) + " characters (" + texts[0] + ")";
  return Status(Code::kMismatch, what + ": " + why + "; " + a.rule);
}

class AgreementTask final : public Task {
 public:
  AgreementTask(TaskFactory inner, std::shared_ptr<SettingsAgreement> agreement, std::string what,
                const TaskContext& ctx)
      : make_(std::move(inner)), agreement_(std::move(agreement)), what_(std::move(what)), ctx_(ctx) {}

  Status start() override {
    SettingsAgreement& a = *agreement_;
    a.all.assign(kRecordWords * static_cast<size_t>(a.ranks), 0);
    RunBuffers buffers;
    buffers.input = a.mine.data();
    buffers.output = a.all.data();
    check_ = std::make_unique<PlanExecutor>(a.plan, buffers, ctx_.id, ctx_.transport);
    return advance(check_->start());
  }
  Status progress() override { return inner_ ? inner_->progress() : advance(check_->progress()); }
  void abort(const Status& reason) override {
    if (inner_)
      inner_->abort(reason);
    else if (check_)
      check_->abort(reason);
  }
  bool quiescent() const override { return (!check_ || check_->quiescent()) && (!inner_ || inner_->quiescent()); }
  int waitingOn() const override {
    if (inner_) return inner_->waitingOn();
    return check_ ? check_->waitingOn() : -1;
  }
  std::string describe() const override {
    if (inner_) return inner_->describe();
    return what_ + " (first step: comparing the ranks' settings)";
  }

 private:
  Status advance(Status st) {
    if (!st.isOk()) return st;
    TSR_RETURN_IF_ERROR(verdict(*agreement_, what_));
    TaskContext next = ctx_;
    next.id.seq += kAgreementSeqSpan;
    next.seqSpan -= kAgreementSeqSpan;
    TSR_ASSIGN_OR_RETURN(inner_, make_(next));
    return inner_->start();
  }

  TaskFactory make_;
  std::shared_ptr<SettingsAgreement> agreement_;
  std::string what_;
  TaskContext ctx_;
  std::unique_ptr<PlanExecutor> check_;
  std::unique_ptr<Task> inner_;
};

// "key=value; key=value" as key -> value, in order of appearance.
std::vector<std::pair<std::string, std::string>> entries(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find("; ", at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    const size_t eq = item.find('=');
    out.emplace_back(item.substr(0, eq), eq == std::string::npos ? "" : item.substr(eq + 1));
    at = end + 2;
  }
  return out;
}

}  // namespace

Result<std::shared_ptr<SettingsAgreement>> makeSettingsAgreement(Team& team, std::string text, std::string rule) {
  if (team.size() < 2) return std::shared_ptr<SettingsAgreement>();
  auto a = std::make_shared<SettingsAgreement>();
  a->rule = std::move(rule);
  TSR_ASSIGN_OR_RETURN(auto plan,
                       bruckAllgatherPlan(team.rank(), team.size(), kRecordWords, DataType::kI64, team.denseOptions()));
  a->plan = std::move(plan);
  a->ranks = team.size();
  a->mine.assign(kRecordWords, 0);
  a->mine[0] = fnv1a(text);
  a->mine[1] = text.size();
  std::memcpy(a->mine.data() + 2, text.data(), std::min(text.size(), kTextBytes));
  a->text = std::move(text);
  return a;
}

TaskFactory afterAgreement(TaskFactory inner, std::shared_ptr<SettingsAgreement> agreement, std::string what) {
  return [inner = std::move(inner), agreement = std::move(agreement),
          what = std::move(what)](const TaskContext& ctx) -> Result<std::unique_ptr<Task>> {
    return std::unique_ptr<Task>(new AgreementTask(inner, agreement, what, ctx));
  };
}

Status agreeNow(Team& team, SettingsAgreement& a, const std::string& what) {
  if (a.agreed) return Status::ok();
  a.all.assign(kRecordWords * static_cast<size_t>(a.ranks), 0);
  auto posted = team.submitPlan(a.plan, a.mine.data(), a.all.data());
  TSR_RETURN_IF_ERROR(posted.isOk() ? posted.value()->wait() : posted.status());
  return verdict(a, what);
}

std::string describeDisagreement(const std::vector<std::string>& records) {
  // Keys in rank 0's order, then those only later ranks have.
  std::vector<std::string> keys;
  std::vector<std::map<std::string, std::string>> parsed;
  for (const std::string& record : records) {
    parsed.emplace_back();
    for (auto& [k, v] : entries(record)) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
      parsed.back()[k] = std::move(v);
    }
  }
  std::string out;
  for (const std::string& k : keys) {
    // The values in order of their first rank, each with its ranks.
    std::vector<std::pair<std::string, std::vector<size_t>>> values;
    for (size_t r = 0; r < parsed.size(); ++r) {
      auto found = parsed[r].find(k);
      const std::string v = found == parsed[r].end() ? "(none)" : found->second;
      auto same = std::find_if(values.begin(), values.end(), [&](const auto& e) { return e.first == v; });
      if (same == values.end()) same = values.insert(values.end(), {v, {}});
      same->second.push_back(r);
    }
    if (values.size() < 2) continue;
    out += out.empty() ? "the ranks created it differently: " : "; ";
    out += k + " is";
    for (size_t i = 0; i < values.size(); ++i) {
      const auto& [v, ranks] = values[i];
      out += (i ? ", " : " ") + v + " on rank" + (ranks.size() > 1 ? "s " : " ");
      for (size_t j = 0; j < ranks.size() && j < 8; ++j) out += (j ? "," : "") + std::to_string(ranks[j]);
      if (ranks.size() > 8) out += ",... (" + std::to_string(ranks.size()) + " ranks)";
    }
  }
  return out;
}

}  // namespace tsr::algorithms
