#include "topology/hostfile.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>

namespace tsr::topology {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

Status lineError(std::string_view file, int line, const std::string& what) {
  return Status(Code::kInvalidArgument, std::string(file) + ":" + std::to_string(line) + ": " + what);
}

// Positive slot count, or -1.
// At most tsrun's 2^20 slots a host (and so a job's total fits an int).
constexpr int kMaxSlots = 1 << 20;

int parseSlots(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value <= 0 || value > kMaxSlots) return -1;
  return value;
}

bool validHostName(std::string_view host) {
  for (char c : host)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) return false;
  return !host.empty();
}

}  // namespace

Result<std::vector<HostSlots>> parseHostfile(std::string_view text, std::string_view fileName) {
  std::vector<HostSlots> hosts;
  int lineNo = 0;
  while (!text.empty()) {
    std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    ++lineNo;
    if (std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;

    std::string_view host = line, rest;
    if (std::size_t space = line.find_first_of(" \t"); space != std::string_view::npos) {
      host = line.substr(0, space);
      rest = trim(line.substr(space + 1));
    }
    int slots = 1;
    if (std::size_t colon = host.find(':'); colon != std::string_view::npos) {
      std::string_view count = host.substr(colon + 1);
      host = host.substr(0, colon);
      slots = parseSlots(count);
      if (slots < 0)
        return lineError(fileName, lineNo,
                         "bad slot count '" + std::string(count) + "' for host '" + std::string(host) +
                             "' (want an integer in 1..1048576)");
    }
    if (!validHostName(host)) return lineError(fileName, lineNo, "bad host name '" + std::string(host) + "'");
    while (!rest.empty()) {
      std::size_t space = rest.find_first_of(" \t");
      std::string_view item = rest.substr(0, space);
      rest = space == std::string_view::npos ? std::string_view() : trim(rest.substr(space + 1));
      std::size_t eq = item.find('=');
      std::string_view key = item.substr(0, eq);
      if (eq == std::string_view::npos || key != "slots")
        return lineError(fileName, lineNo, "unknown field '" + std::string(item) + "' (expected slots=N)");
      std::string_view value = item.substr(eq + 1);
      slots = parseSlots(value);
      if (slots < 0)
        return lineError(fileName, lineNo,
                         "bad slots value '" + std::string(value) + "' for host '" + std::string(host) +
                             "' (want an integer in 1..1048576)");
    }
    bool merged = false;
    for (HostSlots& existing : hosts) {
      if (existing.host == host) {
        existing.slots = std::min(kMaxSlots, existing.slots + slots);
        merged = true;
      }
    }
    if (!merged) hosts.push_back(HostSlots{std::string(host), slots});
  }
  if (hosts.empty()) return Status(Code::kInvalidArgument, "hostfile " + std::string(fileName) + " lists no hosts");
  return hosts;
}

Result<std::vector<int>> mapRanksBySlot(const std::vector<HostSlots>& hosts, int np) {
  int64_t total = 0;
  for (const HostSlots& h : hosts) total += h.slots;
  if (np < 0) return Status(Code::kInvalidArgument, "-np " + std::to_string(np) + " is negative");
  if (np == 0 && total > kMaxSlots)
    return Status(Code::kInvalidArgument, "the hostfile's " + std::to_string(total) + " slots are more ranks than " +
                                              std::to_string(kMaxSlots) + " (give -np)");
  if (np == 0) np = static_cast<int>(total);
  if (np > total)
    return Status(Code::kInvalidArgument,
                  "-np " + std::to_string(np) + " exceeds the " + std::to_string(total) + " slots of the hostfile");
  std::vector<int> hostOfRank;
  for (int h = 0; h < static_cast<int>(hosts.size()) && static_cast<int>(hostOfRank.size()) < np; ++h)
    for (int s = 0; s < hosts[h].slots && static_cast<int>(hostOfRank.size()) < np; ++s) hostOfRank.push_back(h);
  return hostOfRank;
}

}  // namespace tsr::topology
