#include "topology/simulator.h"

#include <map>
#include <set>
#include <string>
#include <tuple>

namespace tsr::topology {
namespace {

std::string where(const Schedule& s, int rank, int step) {
  return s.name + " (N=" + std::to_string(s.numRanks) + "): rank " + std::to_string(rank) + " step " +
         std::to_string(step);
}

Status fail(const std::string& message) { return Status(Code::kInternal, message); }

std::vector<std::uint16_t> only(int numRanks, int contributor) {
  std::vector<std::uint16_t> v(numRanks, 0);
  v[contributor] = 1;
  return v;
}

std::string countsToString(const std::vector<std::uint16_t>& counts) {
  std::string out = "{";
  for (std::size_t r = 0; r < counts.size(); ++r)
    if (counts[r]) out += (out.size() > 1 ? "," : "") + std::to_string(r) + "x" + std::to_string(counts[r]);
  return out + "}";
}

}  // namespace

Status checkMatching(const Schedule& s) {
  if (static_cast<int>(s.steps.size()) != s.numRanks)
    return fail(s.name + ": " + std::to_string(s.steps.size()) + " step lists for " + std::to_string(s.numRanks) +
                " ranks");
  for (int r = 0; r < s.numRanks; ++r)
    if (static_cast<int>(s.steps[r].size()) != s.numSteps())
      return fail(where(s, r, 0) + ": has " + std::to_string(s.steps[r].size()) + " steps, rank 0 has " +
                  std::to_string(s.numSteps()));
  for (int step = 0; step < s.numSteps(); ++step) {
    // (from, to) -> transfers still unmatched
    std::multimap<std::pair<int, int>, const Transfer*> pendingSends;
    for (int r = 0; r < s.numRanks; ++r) {
      const Step& st = s.steps[r][step];
      std::set<int> sent, copied;
      for (const Transfer& t : st.sends) {
        if (t.peer < 0 || t.peer >= s.numRanks || t.peer == r)
          return fail(where(s, r, step) + ": bad send peer " + std::to_string(t.peer));
        if (t.numBlocks() <= 0) return fail(where(s, r, step) + ": empty send to " + std::to_string(t.peer));
        for (const BlockRange& br : t.blocks)
          if (br.count <= 0 || br.count > s.numBlocks)
            return fail(where(s, r, step) + ": bad block range count " + std::to_string(br.count));
        for (int b : expandBlocks(t.blocks, s.numBlocks)) sent.insert(b);
        pendingSends.emplace(std::make_pair(r, t.peer), &t);
      }
      for (const Transfer& t : st.recvs) {
        if (t.peer < 0 || t.peer >= s.numRanks || t.peer == r)
          return fail(where(s, r, step) + ": bad receive peer " + std::to_string(t.peer));
        if (t.combine != Combine::kCopy) continue;
        for (int b : expandBlocks(t.blocks, s.numBlocks)) {
          if (sent.count(b))
            return fail(where(s, r, step) + ": copies into block " + std::to_string(b) +
                        " that it sends in the same step");
          if (!copied.insert(b).second) return fail(where(s, r, step) + ": two copies into block " + std::to_string(b));
        }
      }
    }
    for (int r = 0; r < s.numRanks; ++r) {
      for (const Transfer& t : s.steps[r][step].recvs) {
        auto [lo, hi] = pendingSends.equal_range({t.peer, r});
        auto match = lo;
        while (match != hi && !(match->second->blocks == t.blocks && match->second->combine == t.combine)) ++match;
        if (match == hi)
          return fail(where(s, r, step) + ": receive from " + std::to_string(t.peer) + " of " +
                      std::to_string(t.numBlocks()) + " block(s) has no matching send");
        pendingSends.erase(match);
      }
    }
    if (!pendingSends.empty()) {
      auto [pair, t] = *pendingSends.begin();
      return fail(where(s, pair.first, step) + ": send to " + std::to_string(pair.second) + " of " +
                  std::to_string(t->numBlocks()) + " block(s) has no matching receive");
    }
  }
  return Status::ok();
}

SymbolicState initialState(const Schedule& s) {
  SymbolicState state(s.numRanks,
                      std::vector<std::vector<std::uint16_t>>(s.numBlocks, std::vector<std::uint16_t>(s.numRanks, 0)));
  for (int r = 0; r < s.numRanks; ++r) {
    for (int b = 0; b < s.numBlocks; ++b) {
      switch (s.collective) {
        case Collective::kAllreduce:
        case Collective::kReduceScatter:
          state[r][b][r] = 1;
          break;
        case Collective::kAllGather:
          if (b == s.blockOwnedBy(r)) state[r][b][r] = 1;
          break;
        case Collective::kBroadcast:
          if (r == s.root) state[r][b][r] = 1;
          break;
      }
    }
  }
  return state;
}

Result<SymbolicState> simulate(const Schedule& s, SymbolicState state) {
  struct Arrival {
    int rank;
    int block;
    Combine combine;
    std::vector<std::uint16_t> payload;
  };
  for (int step = 0; step < s.numSteps(); ++step) {
    // Sends read the state at the start of the step: copy every payload before applying any.
    std::vector<Arrival> arrivals;
    for (int r = 0; r < s.numRanks; ++r) {
      for (const Transfer& t : s.steps[r][step].recvs) {
        for (int b : expandBlocks(t.blocks, s.numBlocks)) {
          const auto& payload = state[t.peer][b];
          bool any = false;
          for (auto c : payload) any = any || c;
          if (!any)
            return fail(where(s, t.peer, step) + ": sends block " + std::to_string(b) + " to rank " +
                        std::to_string(r) + " but holds no data for it");
          arrivals.push_back(Arrival{r, b, t.combine, payload});
        }
      }
    }
    for (const Arrival& a : arrivals) {
      auto& mine = state[a.rank][a.block];
      for (int c = 0; c < s.numRanks; ++c)
        mine[c] = a.combine == Combine::kCopy ? a.payload[c] : static_cast<std::uint16_t>(mine[c] + a.payload[c]);
    }
  }
  return state;
}

Status verifySchedule(const Schedule& s) {
  TSR_RETURN_IF_ERROR(checkMatching(s));
  TSR_ASSIGN_OR_RETURN(SymbolicState state, simulate(s, initialState(s)));
  const std::vector<std::uint16_t> everyone(s.numRanks, 1);
  auto bad = [&](int r, int b, const std::string& want) {
    return fail(s.name + " (N=" + std::to_string(s.numRanks) + "): rank " + std::to_string(r) + " block " +
                std::to_string(b) + " ends with " + countsToString(state[r][b]) + ", want " + want);
  };
  for (int r = 0; r < s.numRanks; ++r) {
    switch (s.collective) {
      case Collective::kAllreduce:
        for (int b = 0; b < s.numBlocks; ++b)
          if (state[r][b] != everyone) return bad(r, b, "every rank once");
        break;
      case Collective::kReduceScatter: {
        int b = s.blockOwnedBy(r);
        if (state[r][b] != everyone) return bad(r, b, "every rank once");
        break;
      }
      case Collective::kAllGather:
        for (int b = 0; b < s.numBlocks; ++b) {
          int total = 0, from = -1;
          for (int c = 0; c < s.numRanks; ++c)
            if (state[r][b][c]) total += state[r][b][c], from = c;
          if (total != 1 || s.blockOwnedBy(from) != b) return bad(r, b, "one owner's input once");
        }
        break;
      case Collective::kBroadcast:
        for (int b = 0; b < s.numBlocks; ++b)
          if (state[r][b] != only(s.numRanks, s.root)) return bad(r, b, "the root's input once");
        break;
    }
  }
  return Status::ok();
}

}  // namespace tsr::topology
