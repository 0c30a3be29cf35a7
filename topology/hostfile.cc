#include "topology/hostfile.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>
#include <unordered_map>

namespace tsr::topology {
namespace {

constexpr int kMaxSlots = 1 << 20;

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n\f\v";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::vector<std::string_view> splitWords(std::string_view s) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > start) words.push_back(s.substr(start, i - start));
  }
  return words;
}

// A positive slot count, or 0 when the text is not one.
int parseSlots(std::string_view text) {
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value <= 0 || value > kMaxSlots) {
    return 0;
  }
  return value;
}

// Letters, digits, '.', '-', '_', starting with a letter or digit: the host becomes a word of
// the rsh agent's command line, and a word starting with '-' (-Fconfig, -Jjumphost) would
// be read by ssh as an option.
bool validHostName(std::string_view name) {
  if (name.empty() || !std::isalnum(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
  });
}

// IPv6's loopback, the one IPv6 address a host may be given as (this machine: its ranks use
// 127.0.0.1; a remote IPv6 peer would not fit TSR_PEERS' host:port).
bool ipv6Loopback(std::string_view name) { return name == "::1" || name == "0:0:0:0:0:0:0:1"; }

// Parses "host", "host:N", "::1" or "[::1]:N" into entry; where names the line for errors.
Status parseHostToken(std::string_view token, const std::string& where, HostEntry& entry) {
  size_t colon = token.find(':');
  std::string_view name = token.substr(0, colon);
  if (!token.empty() && token.front() == '[') {
    const size_t close = token.find(']');
    name = token.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1);
    colon = close == std::string_view::npos || close + 1 >= token.size() || token[close + 1] != ':'
                ? std::string_view::npos
                : close + 1;
    if (close == std::string_view::npos || (close + 1 < token.size() && colon == std::string_view::npos) ||
        !ipv6Loopback(name))
      return Status(Code::kInvalidArgument, where + ": bad host '" + std::string(token) +
                                                "' (of IPv6 addresses, the loopback only: ::1, [::1] or [::1]:2)");
  } else if (ipv6Loopback(token)) {
    name = token;
    colon = std::string_view::npos;
  } else if (std::count(token.begin(), token.end(), ':') >= 2) {
    return Status(Code::kInvalidArgument, where + ": bad host '" + std::string(token) +
                                              "' (of IPv6 addresses, the loopback only: ::1, [::1] or [::1]:2)");
  } else if (!validHostName(name)) {
    return Status(Code::kInvalidArgument, where + ": bad host name '" + std::string(name) +
                                              "' (letters, digits, '.', '-' and '_', starting with a "
                                              "letter or digit)");
  }
  entry.name = std::string(name);
  entry.slots = 1;
  if (colon != std::string_view::npos) {
    std::string_view count = token.substr(colon + 1);
    entry.slots = parseSlots(count);
    if (entry.slots == 0) {
      return Status(Code::kInvalidArgument, where + ": bad slot count '" + std::string(count) + "' in '" +
                                                std::string(token) + "' (expected an integer >= 1)");
    }
  }
  return Status::ok();
}

// The entries so far, and where each name is among them: merging stays linear in the hosts.
struct HostTable {
  std::vector<HostEntry> hosts;
  std::unordered_map<std::string, size_t> index;

  // Adds entry, merging with an earlier entry of the same name.
  void add(HostEntry entry) {
    auto [at, added] = index.try_emplace(entry.name, hosts.size());
    if (!added) {
      HostEntry& h = hosts[at->second];
      h.slots = std::min(kMaxSlots, h.slots + entry.slots);
      return;
    }
    hosts.push_back(std::move(entry));
  }
};

}  // namespace

Result<std::vector<HostEntry>> parseHostfile(std::string_view text, std::string_view fileName) {
  HostTable table;
  int lineNo = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++lineNo;
    std::string_view line = raw.substr(0, raw.find('#'));
    line = trim(line);
    if (line.empty()) continue;

    std::string where = std::string(fileName) + ":" + std::to_string(lineNo);
    std::vector<std::string_view> words = splitWords(line);
    HostEntry entry;
    entry.line = lineNo;
    TSR_RETURN_IF_ERROR(parseHostToken(words[0], where, entry));
    bool countInName =
        words[0].find(':') != std::string_view::npos && !ipv6Loopback(words[0]) && words[0].substr(0, 1) != "[";
    if (words[0].substr(0, 1) == "[") countInName = words[0].find("]:") != std::string_view::npos;
    bool sawSlots = false;
    for (size_t i = 1; i < words.size(); ++i) {
      std::string_view word = words[i];
      size_t eq = word.find('=');
      std::string_view key = word.substr(0, eq);
      if (eq == std::string_view::npos || key != "slots") {
        return Status(Code::kInvalidArgument, where + ": unknown keyword '" + std::string(word) + "' in '" +
                                                  std::string(line) +
                                                  "' (expected 'host slots=N', 'host:N' or 'host')");
      }
      if (sawSlots || countInName) {
        return Status(Code::kInvalidArgument, where + ": slot count given twice in '" + std::string(line) + "'");
      }
      std::string_view value = word.substr(eq + 1);
      entry.slots = parseSlots(value);
      if (entry.slots == 0) {
        return Status(Code::kInvalidArgument, where + ": bad slot count '" + std::string(value) + "' in '" +
                                                  std::string(line) + "' (expected an integer >= 1)");
      }
      sawSlots = true;
    }
    table.add(std::move(entry));
  }
  if (table.hosts.empty()) {
    std::string why =
        lineNo == 0 ? "the file is empty" : "all " + std::to_string(lineNo) + " lines are blank or comments";
    return Status(Code::kInvalidArgument, std::string(fileName) + ": hostfile lists no hosts (" + why + ")");
  }
  return std::move(table.hosts);
}

Result<std::vector<HostEntry>> parseHostList(std::string_view list) {
  HostTable table;
  int item = 0;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = list.find(',', pos);
    if (end == std::string_view::npos) end = list.size();
    std::string_view token = trim(list.substr(pos, end - pos));
    pos = end + 1;
    ++item;
    std::string where = "-H '" + std::string(list) + "' item " + std::to_string(item);
    if (token.empty()) {
      return Status(Code::kInvalidArgument, where + ": empty host");
    }
    HostEntry entry;
    entry.line = item;
    TSR_RETURN_IF_ERROR(parseHostToken(token, where, entry));
    table.add(std::move(entry));
  }
  return std::move(table.hosts);
}

int totalSlots(const std::vector<HostEntry>& hosts) {
  long long total = 0;
  for (const HostEntry& h : hosts) total += h.slots;
  return static_cast<int>(std::min<long long>(total, std::numeric_limits<int>::max()));
}

Result<std::vector<int>> mapRanksBySlot(const std::vector<HostEntry>& hosts, int np, std::string_view source) {
  int64_t total = 0;
  for (const HostEntry& h : hosts) total += h.slots;
  if (np < 0) return Status(Code::kInvalidArgument, "-np " + std::to_string(np) + " is negative");
  if (np == 0 && total > kMaxSlots)
    return Status(Code::kInvalidArgument, std::string(source) + "'s " + std::to_string(total) +
                                              " slots are more ranks than " + std::to_string(kMaxSlots) +
                                              " (give -np)");
  if (np == 0) np = static_cast<int>(total);
  if (np > total)
    return Status(Code::kInvalidArgument, "-np " + std::to_string(np) + " exceeds the " + std::to_string(total) +
                                              " slots of " + std::string(source));
  std::vector<int> hostOfRank;
  for (int h = 0; h < static_cast<int>(hosts.size()) && static_cast<int>(hostOfRank.size()) < np; ++h)
    for (int s = 0; s < hosts[h].slots && static_cast<int>(hostOfRank.size()) < np; ++s) hostOfRank.push_back(h);
  return hostOfRank;
}

}  // namespace tsr::topology
