#include "algorithms/spardl/spardl_step.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "algorithms/kernels/sign.h"
#include "algorithms/kernels/topk.h"
#include "algorithms/spardl/sparse_wire.h"
#include "transport/tag.h"

namespace tsr::spardl {

namespace {

double nowUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool running(const Status& s) { return s.code() == Code::kInProgress; }

}  // namespace

SparDLStepTask::SparDLStepTask(std::shared_ptr<SparDLState> state, const algorithms::TaskContext& ctx)
    : state_(std::move(state)), ctx_(ctx) {}

Status SparDLStepTask::start() {
  SparDLState& s = *state_;
  startUs_ = nowUs();
  s.stats = StepStats{};
  // One pass: the sum, a branch-free NaN/Inf flag (all exponent bits set), a clean residual.
  uint32_t nonFinite = 0;
  for (size_t j = 0; j < s.count; ++j) {
    float v = s.g[j] + s.residual[j];
    s.work[j] = v;
    s.residualNext[j] = 0.0f;
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    nonFinite |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  badFlag_ = nonFinite;
  ownBad_ = nonFinite != 0;
  for (BlockState& b : s.blocks) b.dirty = true, b.copies = 1, b.selected.clear();
  s.stats.local = nowUs() - startUs_;

  // Every message of the step is known now: post all receives at once.
  const auto& steps = s.run;
  sends_.assign(steps.size(), {});
  recvs_.assign(steps.size(), {});
  size_t maxK = 0;
  for (const BlockState& b : s.blocks) maxK = std::max(maxK, b.k);
  for (size_t st = 0; st < steps.size(); ++st) {
    const int nb = steps[st].slots ? s.teams : s.numBlocks;
    for (const auto& t : steps[st].step->sends)
      sends_[st].push_back({t.peer, t.combine, topology::expandBlocks(t.blocks, nb), {}, {}, {}});
    for (const auto& t : steps[st].step->recvs) {
      Message m{t.peer, t.combine, topology::expandBlocks(t.blocks, nb), {}, {}, {}};
      m.buffer.resize((maxWireBytes(m.blocks.size(), maxK) + 7) / 8);
      recvs_[st].push_back(std::move(m));
    }
  }
  for (size_t st = 0; st < steps.size(); ++st)
    for (Message& m : recvs_[st]) {
      uint64_t tag = transport::makeDataTag(m.peer, ctx_.id.comm, ctx_.id.seq, static_cast<uint32_t>(st));
      Status posted = ctx_.transport.recv(m.peer, tag, transport::kTagFullMask, m.buffer.data(), m.buffer.size() * 8,
                                          transport::MemoryType::kHost, &m.done);
      if (!posted.isOk()) return fail(posted);
    }
  current_ = 0;
  if (steps.empty()) return finish();
  Status st = beginStep();
  if (!st.isOk()) return fail(st);
  return progress();
}

// Selects and sends this step's bags (they read the blocks as the step begins).
Status SparDLStepTask::beginStep() {
  SparDLState& s = *state_;
  const bool slots = s.run[current_].slots;
  if (slots && (current_ == 0 || !s.run[current_ - 1].slots)) enterCross();
  for (Message& m : sends_[current_]) {
    encodeHeader({badFlag_, s.count, static_cast<float>(s.params.density), static_cast<uint32_t>(m.blocks.size())},
                 m.bytes);
    for (int b : m.blocks) {
      if (slots) {
        encodeBlock(static_cast<uint32_t>(b), 1, s.slotIndices[b], s.slotValues[b], m.bytes);
        continue;
      }
      if (s.blocks[b].dirty) select(b, s.blocks[b].k);
      const BlockState& blk = s.blocks[b];
      std::vector<float> values(blk.selected.size());
      for (size_t i = 0; i < values.size(); ++i) values[i] = s.work[blk.offset + blk.selected[i]];
      encodeBlock(static_cast<uint32_t>(b), blk.copies, blk.selected, values, m.bytes);
    }
    uint64_t tag = transport::makeDataTag(s.rank, ctx_.id.comm, ctx_.id.seq, static_cast<uint32_t>(current_));
    TSR_RETURN_IF_ERROR(
        ctx_.transport.send(m.peer, tag, m.bytes.data(), m.bytes.size(), transport::MemoryType::kHost, &m.done));
  }
  return Status::ok();
}

Status SparDLStepTask::checkCompletions(std::vector<Message>& messages, const char* what, bool* allDone) {
  for (Message& m : messages) {
    if (!m.done.done) {
      *allDone = false;
      continue;
    }
    if (!m.done.status.isOk()) {
      Status peer = ctx_.transport.peerStatus(m.peer);
      Code code = peer.isOk() ? m.done.status.code() : Code::kPeerFailed;
      // A message too big for the buffer this rank's own parameters allow means the ranks
      // declared the tensor differently.
      std::string hint = code == Code::kMismatch ? " (do all ranks declare tensor " + state_->name +
                                                       " with the same count, density and teams?)"
                                                 : "";
      return Status(code, "rank " + std::to_string(state_->rank) + ": spardl " + what + " rank " +
                              std::to_string(m.peer) + ": " + (peer.isOk() ? m.done.status : peer).message() + hint);
    }
  }
  return Status::ok();
}

Status SparDLStepTask::progress() {
  if (!running(status_)) return status_;
  SparDLState& s = *state_;
  while (current_ < sends_.size()) {
    bool done = true;
    Status st = checkCompletions(sends_[current_], "send to", &done);
    if (st.isOk()) st = checkCompletions(recvs_[current_], "receive from", &done);
    if (!st.isOk()) return fail(st);
    if (!done) return status_;
    st = finishStep();
    if (!st.isOk()) return fail(st);
    if (s.run[current_].slots && (current_ + 1 == s.run.size() || !s.run[current_ + 1].slots)) leaveCross();
    if (++current_ < sends_.size()) {
      st = beginStep();
      if (!st.isOk()) return fail(st);
    }
  }
  return finish();
}

Status SparDLStepTask::finishStep() {
  SparDLState& s = *state_;
  double t = nowUs();
  std::vector<int> exchanged;
  for (Message& m : recvs_[current_]) {
    TSR_RETURN_IF_ERROR(merge(m));
    if (m.combine == topology::Combine::kReduce) exchanged.insert(exchanged.end(), m.blocks.begin(), m.blocks.end());
  }
  // A block sent for reduction that did not come back in the same step now lives elsewhere.
  for (const Message& m : sends_[current_])
    if (m.combine == topology::Combine::kReduce)
      for (int b : m.blocks)
        if (std::find(exchanged.begin(), exchanged.end(), b) == exchanged.end()) clearBlock(b);
  s.stats.merge += nowUs() - t;
  return Status::ok();
}

Status SparDLStepTask::merge(Message& m) {
  SparDLState& s = *state_;
  WireHeader h;
  std::vector<WireBlock> blocks;
  auto bytes = std::span<const std::byte>(reinterpret_cast<const std::byte*>(m.buffer.data()), m.done.bytes);
  Status st = decode(bytes, &h, &blocks);
  auto from = [&] {
    return "rank " + std::to_string(s.rank) + ": spardl tensor " + s.name + ": rank " + std::to_string(m.peer);
  };
  if (!st.isOk()) return Status(st.code(), from() + " sent a " + st.message());
  if (h.count != s.count || h.density != static_cast<float>(s.params.density))
    return Status(Code::kMismatch, from() + " has count " + std::to_string(h.count) + " and density " +
                                       std::to_string(h.density) + ", this rank " + std::to_string(s.count) + " and " +
                                       std::to_string(s.params.density));
  if (blocks.size() != m.blocks.size())
    return Status(Code::kMismatch, from() + " sent " + std::to_string(blocks.size()) + " blocks where " +
                                       std::to_string(m.blocks.size()) + " were expected");
  badFlag_ |= h.flags & 1u;
  bool bad = badFlag_ != 0;  // once a NaN is known, the values no longer matter
  if (s.run[current_].slots) {
    const BlockState& mine = s.blocks[s.myBlock];
    for (size_t i = 0; i < blocks.size(); ++i) {
      const WireBlock& in = blocks[i];
      if (static_cast<int>(in.id) != m.blocks[i] || in.values.size() > mine.k)
        return Status(Code::kMismatch, from() + " sent slot " + std::to_string(in.id) + " with " +
                                           std::to_string(in.values.size()) + " entries where slot " +
                                           std::to_string(m.blocks[i]) + " was expected");
      s.slotIndices[in.id].assign(in.indices.begin(), in.indices.end());
      s.slotValues[in.id].assign(in.values.begin(), in.values.end());
      for (uint32_t idx : in.indices)
        if (idx >= mine.count && !bad)
          return Status(Code::kInvalidArgument, from() + " sent index " + std::to_string(idx) + " in slot " +
                                                    std::to_string(in.id) + " of a block of " +
                                                    std::to_string(mine.count));
    }
    return Status::ok();
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    const WireBlock& in = blocks[i];
    BlockState& blk = s.blocks[m.blocks[i]];
    if (static_cast<int>(in.id) != m.blocks[i] || in.values.size() > blk.k)
      return Status(Code::kMismatch, from() + " sent block " + std::to_string(in.id) + " with " +
                                         std::to_string(in.values.size()) + " entries where block " +
                                         std::to_string(m.blocks[i]) + " with at most " + std::to_string(blk.k) +
                                         " was expected");
    TSR_RETURN_IF_ERROR(checkCopies(m, in, blk, from));
    for (uint32_t idx : in.indices)
      if (idx >= blk.count && !bad)
        return Status(Code::kInvalidArgument, from() + " sent index " + std::to_string(idx) + " in block " +
                                                  std::to_string(in.id) + " of " + std::to_string(blk.count));
    float* base = s.work.data() + blk.offset;
    if (m.combine == topology::Combine::kReduce) {
      for (size_t e = 0; e < in.indices.size(); ++e)
        if (in.indices[e] < blk.count) base[in.indices[e]] += in.values[e];
      blk.dirty = true;
      // An exchange (this rank sent the block too): both now hold the same sum.
      for (const Message& sent : sends_[current_])
        if (sent.combine == topology::Combine::kReduce &&
            std::find(sent.blocks.begin(), sent.blocks.end(), m.blocks[i]) != sent.blocks.end())
          blk.copies += in.copies;
    } else {
      clearBlock(m.blocks[i]);
      blk.selected.clear();
      for (size_t e = 0; e < in.indices.size(); ++e)
        if (in.indices[e] < blk.count) base[in.indices[e]] = in.values[e], blk.selected.push_back(in.indices[e]);
      blk.dirty = false;
      blk.copies = in.copies;
    }
  }
  return Status::ok();
}

// A block's copies (the ranks holding that very sum) divide what a selection drops: zero gave
// Inf, a count that wrapped around gave zero. The schedule allows 1..T (the teams hold one copy
// each at most), and an exchange may not take this rank's own count past T.
template <typename From>
Status SparDLStepTask::checkCopies(const Message& m, const WireBlock& in, const BlockState& blk,
                                   const From& from) const {
  const uint64_t teams = static_cast<uint64_t>(state_->teams);
  bool exchange = false;
  for (const Message& sent : sends_[current_])
    exchange |= sent.combine == topology::Combine::kReduce && m.combine == topology::Combine::kReduce &&
                std::find(sent.blocks.begin(), sent.blocks.end(), static_cast<int>(in.id)) != sent.blocks.end();
  uint64_t after = exchange ? uint64_t{blk.copies} + in.copies : in.copies;
  if (in.copies == 0 || in.copies > teams || after > teams)
    return Status(Code::kInvalidArgument,
                  from() + " sent block " + std::to_string(in.id) + " with copies=" + std::to_string(in.copies) +
                      (exchange ? " (this rank holds " + std::to_string(blk.copies) + ")" : std::string()) +
                      "; the schedule allows 1.." + std::to_string(teams) + " in all");
  return Status::ok();
}

// Keeps the k largest magnitudes of a dirty block; the rest goes to this rank's residual,
// divided among the ranks that hold this same sum.
void SparDLStepTask::select(int block, size_t k) {
  SparDLState& s = *state_;
  double t = nowUs();
  BlockState& blk = s.blocks[block];
  float* x = s.work.data() + blk.offset;
  float* r = s.residualNext.data() + blk.offset;
  size_t kept = kernels::topkSelect(x, blk.count, k, s.topkOut.data(), s.topkScratch.data(), s.topkScratch.size());
  const float share = 1.0f / static_cast<float>(blk.copies);
  blk.selected.clear();
  // The runs between kept indices move to the residual in tight loops the compiler vectorizes
  // (x * 1 is exact, and adding a zero changes nothing).
  auto drop = [&](size_t from, size_t to) {
    for (size_t j = from; j < to; ++j) {
      r[j] += x[j] * share;
      x[j] = 0.0f;
    }
  };
  size_t from = 0;
  for (size_t i = 0; i < kept; ++i) {
    uint32_t j = s.topkOut[i];
    drop(from, j);
    if (x[j] != 0.0f) blk.selected.push_back(j);  // zeros need not travel
    from = j + 1;
  }
  drop(from, blk.count);
  blk.dirty = false;
  s.stats.select += nowUs() - t;
}

// B-SAG, before the cross phase: this rank's block (summed over its team) is pre-selected to
// k' entries, which become its team's slot.
void SparDLStepTask::enterCross() {
  SparDLState& s = *state_;
  BlockState& blk = s.blocks[s.myBlock];
  blk.dirty = true;  // re-select even a clean block: k' <= k_b
  select(s.myBlock, s.kPrime);
  for (int t = 0; t < s.teams; ++t) s.slotIndices[t].clear(), s.slotValues[t].clear();
  for (uint32_t j : blk.selected) {
    s.slotIndices[s.myTeam].push_back(j);
    s.slotValues[s.myTeam].push_back(s.work[blk.offset + j]);
  }
}

// B-SAG, after it: every member of the cross group sums the T slots in team order (so all get
// the same bits) into the block, which T ranks now hold; k' follows the window rule: more
// than k_b distinct entries shrinks it, fewer grows it, the step doubling while the direction
// holds and halving when it flips, within [ceil(k_b / T), k_b].
void SparDLStepTask::leaveCross() {
  SparDLState& s = *state_;
  clearBlock(s.myBlock);
  BlockState& blk = s.blocks[s.myBlock];
  float* x = s.work.data() + blk.offset;
  uint64_t distinct = 0;
  for (int t = 0; t < s.teams; ++t)
    for (size_t e = 0; e < s.slotIndices[t].size(); ++e) {
      uint32_t j = s.slotIndices[t][e];
      if (j >= blk.count) continue;
      if (!s.seen[j]) s.seen[j] = 1, ++distinct;
      x[j] += s.slotValues[t][e];
    }
  for (int t = 0; t < s.teams; ++t)
    for (uint32_t j : s.slotIndices[t])
      if (j < blk.count) s.seen[j] = 0;
  blk.dirty = true;
  blk.copies = static_cast<uint32_t>(s.teams);
  s.lastCrossCount = distinct;
  int direction = distinct > blk.k ? -1 : 1;
  if (direction == s.kDirection)
    s.kStep *= 2;
  else
    s.kStep = std::max<size_t>(1, s.kStep / 2);
  s.kDirection = direction;
  size_t low = (blk.k + s.teams - 1) / s.teams;
  long next = static_cast<long>(s.kPrime) + direction * static_cast<long>(s.kStep);
  s.kPrime = static_cast<size_t>(std::clamp<long>(next, static_cast<long>(low), static_cast<long>(blk.k)));
}

void SparDLStepTask::clearBlock(int block) {
  SparDLState& s = *state_;
  BlockState& blk = s.blocks[block];
  float* x = s.work.data() + blk.offset;
  if (blk.dirty)
    std::fill(x, x + blk.count, 0.0f);
  else
    for (uint32_t j : blk.selected) x[j] = 0.0f;
  blk.selected.clear();
  blk.dirty = false;
  blk.copies = 1;
}

Status SparDLStepTask::finish() {
  SparDLState& s = *state_;
  for (size_t b = 0; b < s.blocks.size(); ++b)
    if (s.blocks[b].dirty) select(static_cast<int>(b), s.blocks[b].k);
  if (badFlag_) {
    // The flag travels as one bit: this rank knows only whether the NaN was its own.
    const std::string who = ownBad_ ? "rank " + std::to_string(ctx_.id.rank) + " (this rank) had"
                                    : "another rank than this one (rank " + std::to_string(ctx_.id.rank) + ") had";
    return fail(Status(Code::kNumericError, "spardl tensor " + s.name + ": " + who +
                                                " NaN or Inf in gradient + residual; the tensor and the residuals "
                                                "are unchanged"));
  }
  double t = nowUs();
  std::copy_n(s.work.data(), s.count, s.g);  // copy_n: g may be NULL when count is 0
  s.residual.swap(s.residualNext);
  for (const BlockState& b : s.blocks) s.stats.resultNonZeros += b.selected.size();
  ++s.step;
  double end = nowUs();
  s.stats.local += end - t;
  s.stats.total = end - startUs_;
  s.stats.wire = std::max(0.0, s.stats.total - s.stats.select - s.stats.merge - s.stats.local);
  status_ = Status::ok();
  return status_;
}

Status SparDLStepTask::fail(Status status) {
  if (running(status_)) status_ = std::move(status);
  for (auto* list : {&sends_, &recvs_})
    for (auto& step : *list)
      for (Message& m : step)
        if (m.done.posted && !m.done.done) ctx_.transport.cancel(&m.done);
  return status_;
}

void SparDLStepTask::abort(const Status& reason) { fail(reason).ignore(); }

bool SparDLStepTask::quiescent() const {
  for (const auto* list : {&sends_, &recvs_})
    for (const auto& step : *list)
      for (const Message& m : step)
        if (m.done.posted && !m.done.done) return false;
  return true;
}

int SparDLStepTask::waitingOn() const {
  if (current_ >= recvs_.size()) return -1;
  for (const Message& m : recvs_[current_])
    if (!m.done.done) return m.peer;
  for (const Message& m : sends_[current_])
    if (!m.done.done) return m.peer;
  return -1;
}

}  // namespace tsr::spardl
