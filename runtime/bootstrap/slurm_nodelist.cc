#include "runtime/bootstrap/slurm_nodelist.h"

#include <algorithm>

namespace tsr::runtime {

namespace {

// What one nodelist may expand to, in all: a few hundred bytes of brackets can name billions
// of hosts, which must be refused before they are made, not after.
constexpr size_t kMaxHosts = 1 << 20;
constexpr size_t kMaxNameBytes = size_t{64} << 20;  // the host names' characters together

// What is left of those limits while a nodelist is expanded.
struct Budget {
  size_t hosts = kMaxHosts;
  size_t bytes = kMaxNameBytes;
};

Status bad(const std::string& nodelist, const std::string& why) {
  return Status(Code::kInvalidArgument, "bad Slurm nodelist '" + nodelist + "': " + why);
}

bool allDigits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// Splits on commas that are not inside brackets.
std::vector<std::string> splitTopLevel(const std::string& s) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

std::string pad(unsigned long long value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

Status tooMany(const std::string& nodelist) {
  return bad(nodelist, "names more than " + std::to_string(kMaxHosts) + " hosts or " + std::to_string(kMaxNameBytes) +
                           " bytes of host names");
}

// Expands the inside of one bracket group ("01-03,7") into its labels, at most maxLabels.
Result<std::vector<std::string>> expandGroup(const std::string& nodelist, const std::string& group, size_t maxLabels) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= group.size()) {
    size_t comma = group.find(',', start);
    std::string term = group.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t dash = term.find('-');
    std::string lo = dash == std::string::npos ? term : term.substr(0, dash);
    std::string hi = dash == std::string::npos ? term : term.substr(dash + 1);
    if (!allDigits(lo) || !allDigits(hi) || lo.size() > 18 || hi.size() > 18)
      return bad(nodelist, "range '" + term + "' is not a number or a-b range");
    unsigned long long a = std::stoull(lo), b = std::stoull(hi);
    if (a > b) return bad(nodelist, "range '" + term + "' goes down");
    if (b - a >= maxLabels - out.size()) return tooMany(nodelist);
    size_t width = lo.size() > 1 && lo[0] == '0' ? lo.size() : 0;
    for (unsigned long long v = a; v <= b; ++v) out.push_back(pad(v, width));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// Expands one top-level item ("rack[1-2]n[01-02]") into host names.
Status expandItem(const std::string& nodelist, const std::string& item, std::vector<std::string>& hosts,
                  Budget& budget) {
  std::vector<std::string> partial{""};
  size_t pos = 0;
  while (pos < item.size()) {
    size_t open = item.find('[', pos);
    size_t stray = item.find(']', pos);
    if (stray != std::string::npos && (open == std::string::npos || stray < open))
      return bad(nodelist, "unmatched ']' in '" + item + "'");
    std::string text = item.substr(pos, open == std::string::npos ? std::string::npos : open - pos);
    size_t partialBytes = 0;
    for (const auto& p : partial) partialBytes += p.size();
    if (text.size() > (budget.bytes - std::min(partialBytes, budget.bytes)) / partial.size()) return tooMany(nodelist);
    for (auto& p : partial) p += text;
    if (open == std::string::npos) break;
    size_t close = item.find(']', open);
    if (close == std::string::npos) return bad(nodelist, "unmatched '[' in '" + item + "'");
    std::string inside = item.substr(open + 1, close - open - 1);
    if (inside.find('[') != std::string::npos) return bad(nodelist, "nested '[' in '" + item + "'");
    TSR_ASSIGN_OR_RETURN(auto labels, expandGroup(nodelist, inside, budget.hosts / partial.size()));
    // Every prefix with every label: count the names and their bytes before making them.
    size_t prefixBytes = 0, labelBytes = 0;
    for (const auto& p : partial) prefixBytes += p.size();
    for (const auto& l : labels) labelBytes += l.size();
    if (partial.size() > budget.hosts / labels.size() || prefixBytes > budget.bytes / labels.size() ||
        labelBytes > budget.bytes / partial.size() ||
        prefixBytes * labels.size() + labelBytes * partial.size() > budget.bytes)
      return tooMany(nodelist);
    std::vector<std::string> next;
    next.reserve(partial.size() * labels.size());
    for (const auto& p : partial)
      for (const auto& l : labels) next.push_back(p + l);
    partial = std::move(next);
    pos = close + 1;
  }
  if (partial.size() == 1 && partial[0].empty()) return bad(nodelist, "empty host name");
  size_t bytes = 0;
  for (const auto& p : partial) bytes += p.size();
  if (partial.size() > budget.hosts || bytes > budget.bytes) return tooMany(nodelist);
  budget.hosts -= partial.size();
  budget.bytes -= bytes;
  for (auto& p : partial) {
    if (p.empty()) return bad(nodelist, "empty host name in '" + item + "'");
    hosts.push_back(std::move(p));
  }
  return Status::ok();
}

}  // namespace

Result<std::vector<std::string>> expandNodelist(const std::string& nodelist) {
  if (nodelist.empty()) return bad(nodelist, "empty");
  int depth = 0;
  for (char c : nodelist) {
    if (c == '[') ++depth;
    if (c == ']' && --depth < 0) return bad(nodelist, "unmatched ']'");
    if (c == ' ' || c == '\t' || c == '\n') return bad(nodelist, "contains whitespace");
  }
  if (depth != 0) return bad(nodelist, "unmatched '['");
  std::vector<std::string> hosts;
  Budget budget;
  for (const auto& item : splitTopLevel(nodelist)) {
    if (item.empty()) return bad(nodelist, "empty item between commas");
    TSR_RETURN_IF_ERROR(expandItem(nodelist, item, hosts, budget));
  }
  return hosts;
}

Result<std::vector<int>> expandTasksPerNode(const std::string& tasksPerNode) {
  auto badTpn = [&](const std::string& why) {
    return Status(Code::kInvalidArgument, "bad Slurm tasks-per-node list '" + tasksPerNode + "': " + why);
  };
  if (tasksPerNode.empty()) return badTpn("empty");
  std::vector<int> counts;
  size_t start = 0;
  while (true) {
    size_t comma = tasksPerNode.find(',', start);
    std::string term = tasksPerNode.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::string countText = term, repeatText = "1";
    size_t paren = term.find('(');
    if (paren != std::string::npos) {
      if (term.size() < paren + 4 || term[paren + 1] != 'x' || term.back() != ')')
        return badTpn("term '" + term + "' is not N or N(xK)");
      countText = term.substr(0, paren);
      repeatText = term.substr(paren + 2, term.size() - paren - 3);
    }
    if (!allDigits(countText) || !allDigits(repeatText) || countText.size() > 9 || repeatText.size() > 7)
      return badTpn("term '" + term + "' is not N or N(xK)");
    int count = std::stoi(countText), repeat = std::stoi(repeatText);
    if (count < 1 || repeat < 1) return badTpn("term '" + term + "' has a zero");
    if (counts.size() + static_cast<size_t>(repeat) > kMaxHosts) return badTpn("too many nodes");
    counts.insert(counts.end(), static_cast<size_t>(repeat), count);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return counts;
}

}  // namespace tsr::runtime
