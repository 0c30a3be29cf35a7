// SparDL's parameters and per-tensor state, apart from the communicator (spardl_step.h), so
// that tests and fuzz targets build exactly the state a tensor would.
#include <algorithm>
#include <cmath>

#include "algorithms/dense/partition.h"
#include "algorithms/kernels/topk.h"
#include "algorithms/spardl/spardl_step.h"
#include "topology/bruck_schedule.h"
#include "topology/recursive_schedule.h"
#include "topology/spardl_schedule.h"

namespace tsr::spardl {

Result<Params> parseParams(const std::map<std::string, std::string>& kv, int size) {
  Params p;
  for (const auto& entry : kv) {
    // Named references, not a structured binding: clang before 16 cannot capture those.
    const std::string& key = entry.first;
    const std::string& value = entry.second;
    auto bad = [&](const std::string& accepted) {
      return Status(Code::kInvalidArgument, "spardl: " + key + "=" + value + " is not accepted (" + accepted + ")");
    };
    char* end = nullptr;
    if (key == "algorithm") {
      if (value != "spardl") return bad("spardl");
    } else if (key == "density") {
      double d = std::strtod(value.c_str(), &end);
      if (value.empty() || *end || !(d > 0.0 && d <= 1.0)) return bad("a number in (0, 1]");
      p.density = d;
    } else if (key == "teams") {
      long t = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end || t < 1 || t > size || size % t != 0)
        return bad("a team count that divides the " + std::to_string(size) + " ranks");
      p.teams = static_cast<int>(t);
    } else if (key == "sag") {
      if (value == "auto")
        p.sag = Sag::kAuto;
      else if (value == "r")
        p.sag = Sag::kR;
      else if (value == "b")
        p.sag = Sag::kB;
      else
        return bad("auto, r or b");
    } else {
      return Status(Code::kInvalidArgument,
                    "spardl: unknown parameter " + key + "=" + value + " (accepted: algorithm, density, teams, sag)");
    }
  }
  bool pow2 = topology::isPowerOfTwo(p.teams);
  if (p.sag == Sag::kR && !pow2)
    return Status(Code::kInvalidArgument, "spardl: sag=r needs a power-of-two team count, not teams=" +
                                              std::to_string(p.teams) + " (use sag=b or sag=auto)");
  if (p.sag == Sag::kAuto || p.teams == 1) p.sag = pow2 ? Sag::kR : Sag::kB;
  return p;
}

Result<std::shared_ptr<SparDLState>> makeState(std::string name, size_t count, const Params& params, int rank,
                                               const std::vector<int>& ringOrder) {
  auto named = [&](const Status& st) { return Status(st.code(), "spardl tensor " + name + ": " + st.message()); };
  auto s = std::make_shared<SparDLState>();
  s->params = params;
  s->count = count;
  s->rank = rank;
  s->size = static_cast<int>(ringOrder.size());
  auto split = topology::teamSplit(ringOrder, s->params.teams);
  if (!split.isOk()) return named(split.status());
  const auto& teams = split.value().teams;
  const int n = s->size, nb = split.value().teamSize, T = s->params.teams;
  s->teams = T;
  for (int t = 0; t < T; ++t)
    for (int j = 0; j < nb; ++j)
      if (teams[t][j] == s->rank) s->myTeam = t, s->myBlock = j;
  if (s->params.sag == Sag::kR) {
    auto schedule = topology::sparRSagAllreduce(split.value());
    if (!schedule.isOk()) return named(schedule.status());
    s->schedules.push_back(schedule.take());
    s->algorithm = T == 1 ? "spardl" : "spardl-rsag T=" + std::to_string(T);
  } else {
    // B-SAG: SRS in the teams, the cross-team Bruck of slots, Bruck all-gather in the teams.
    topology::ScheduleBuilder srs("spar-bsag-srs", topology::Collective::kReduceScatter, n, nb);
    for (const auto& team : teams) topology::appendSparReduceScatter(srs, 0, team);
    topology::ScheduleBuilder gather("spar-bsag-team-gather", topology::Collective::kAllGather, n, nb);
    std::vector<topology::Piece> pieces;
    for (int j = 0; j < nb; ++j) pieces.push_back({topology::BlockRange{j, 1}});
    for (const auto& team : teams) topology::appendBruckAllGather(gather, 0, team, pieces);
    s->schedules.push_back(srs.finish());
    s->schedules.push_back(topology::sparBSagCrossGather(split.value()));
    s->schedules.push_back(gather.finish());
    s->algorithm = "spardl-bsag T=" + std::to_string(T);
  }
  for (size_t ph = 0; ph < s->schedules.size(); ++ph)
    for (const auto& step : s->schedules[ph].steps[s->rank])
      s->run.push_back({&step, s->params.sag == Sag::kB && ph == 1});
  s->numBlocks = nb;
  size_t maxCount = 0, maxK = 0;
  for (int b = 0; b < nb; ++b) {
    algorithms::Range r = algorithms::balancedPart(count, nb, b);
    BlockState blk;
    blk.offset = r.offset;
    blk.count = r.count;
    blk.k = static_cast<size_t>(std::ceil(s->params.density * static_cast<double>(r.count)));
    blk.k = std::min(blk.k, r.count);
    maxCount = std::max(maxCount, blk.count);
    maxK = std::max(maxK, blk.k);
    s->blocks.push_back(blk);
  }
  s->kPrime = (s->blocks[s->myBlock].k + T - 1) / T;
  s->kStep = std::max<size_t>(1, s->kPrime / 4);
  s->slotIndices.resize(T);
  s->slotValues.resize(T);
  s->seen.assign(maxCount, 0);
  s->work.resize(count);
  s->residual.assign(count, 0.0f);
  s->residualNext.assign(count, 0.0f);
  s->topkOut.resize(std::max<size_t>(1, maxK));
  s->topkScratch.resize(std::max<size_t>(1, kernels::topkScratchCount(maxCount, maxK)));
  s->name = std::move(name);
  return s;
}

}  // namespace tsr::spardl
