// The alpha-beta cost model (see cost_model.h for the words).
#include "algorithms/dense/cost_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace tsr::algorithms {

namespace {

double send(const LinkCost& link, double bytes) { return link.latencySec + bytes / link.bytesPerSec; }

// `flows` ranks of a host send `bytes` each across the network at once, spread over its NICs.
double sendAcross(const LinkModel& links, double bytes, double flows) {
  return links.net.latencySec + bytes * std::max(1.0, flows / std::max(1, links.netNics)) / links.net.bytesPerSec;
}

// The link the ring's slowest hop takes: the network as soon as there are two hosts.
const LinkCost& ringLink(const JobShape& job, const LinkModel& links) { return job.hosts > 1 ? links.net : links.host; }

// Over the network Rabenseifner's big exchanges pipeline worse than the ring's steady stream:
// on 4 hosts at 1 Gbit/s it ran at 1.10-1.18x the floor where the ring ran at 1.04-1.05x
// (docs/performance.md), so its network bytes count 1.1 times. Over shared memory it was the
// faster of the two at every size, so no penalty there.
constexpr double kRabenseifnerNetPenalty = 1.1;

// Rabenseifner on n ranks and `bytes`: fold, log2 P halving steps sending bytes*mask/P, the
// same back, unfold. With ranks placed host after host (`perHost` each), a step whose mask
// reaches perHost crosses hosts, and `flows` ranks of a host then send across at once.
double rabenseifner(double bytes, int n, int perHost, bool severalHosts, const LinkModel& links, int flows) {
  if (n <= 1) return 0;
  int p = 1;
  while (p * 2 <= n) p *= 2;
  double t = 0;
  if (n > p) {
    bool foldAcross = severalHosts && perHost < 2;
    t += 2 * (foldAcross ? sendAcross(links, bytes * kRabenseifnerNetPenalty, flows) : send(links.host, bytes));
  }
  for (int mask = p / 2; mask >= 1; mask /= 2) {
    bool across = severalHosts && mask >= perHost;
    double step = across ? sendAcross(links, bytes * mask / p * kRabenseifnerNetPenalty, flows)
                         : send(links.host, bytes * mask / p);
    t += 2 * step;  // halving and the doubling step of the same mask
  }
  return t;
}

// Recursive doubling: the same fold, then log2 P steps that each move the whole buffer.
double doubling(double bytes, int n, int perHost, bool severalHosts, const LinkModel& links) {
  if (n <= 1) return 0;
  int p = 1;
  while (p * 2 <= n) p *= 2;
  double t = 0;
  if (n > p) t += 2 * (severalHosts && perHost < 2 ? send(links.net, bytes) : send(links.host, bytes));
  for (int mask = 1; mask < p; mask *= 2)
    t += severalHosts && mask >= perHost ? sendAcross(links, bytes, perHost) : send(links.host, bytes);
  return t;
}

}  // namespace

std::vector<Candidate> rankAllreduce(size_t bytes, const JobShape& job, const LinkModel& links) {
  const double s = static_cast<double>(bytes);
  const int n = std::max(1, job.size);
  const bool several = job.hosts > 1;
  std::vector<Candidate> out;
  out.push_back({"ring", 2.0 * (n - 1) * send(ringLink(job, links), s / n)});
  const int perHost = several ? job.ranksPerHost : n;
  out.push_back({"rabenseifner", rabenseifner(s, n, perHost, several, links, perHost)});
  out.push_back({"doubling", doubling(s, n, perHost, several, links)});
  if (job.hostGrid && several) {
    const int x = job.ranksPerHost, y = job.hosts;
    double rows = 2.0 * (x - 1) * send(links.host, s / x);
    // Columns: x flows per host cross at once, each carrying 1/x of the buffer.
    out.push_back({"torus", rows + 2.0 * (y - 1) * sendAcross(links, s / x / y, x)});
    // Across hosts, each column is one rank per host: every step crosses, x flows at once.
    out.push_back({"hier", rows + rabenseifner(s / x, y, 1, true, links, x)});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Candidate& a, const Candidate& b) { return a.seconds < b.seconds; });
  return out;
}

std::vector<Candidate> rankAllgather(size_t bytesPerRank, const JobShape& job, const LinkModel& links) {
  const double s = static_cast<double>(bytesPerRank);
  const int n = std::max(1, job.size);
  std::vector<Candidate> out;
  out.push_back({"ring", (n - 1) * send(ringLink(job, links), s)});
  // Bruck's partners are far apart: with several hosts every rank of a host sends across.
  double bruck = 0;
  for (int d = 1; d < n; d *= 2) {
    double pieces = std::min(d, n - d);
    bruck += job.hosts > 1 ? sendAcross(links, pieces * s, job.ranksPerHost) : send(links.host, pieces * s);
  }
  out.push_back({"bruck", bruck});
  std::stable_sort(out.begin(), out.end(),
                   [](const Candidate& a, const Candidate& b) { return a.seconds < b.seconds; });
  return out;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// One number with an optional unit; units maps a suffix to its factor.
Result<double> parseQuantity(const std::string& var, const std::string& text,
                             const std::vector<std::pair<const char*, double>>& units, const char* accepted) {
  std::string t = lower(trim(text));
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  std::string unit = trim(end ? std::string(end) : "");
  double factor = 0;
  for (const auto& [suffix, f] : units)
    if (unit == suffix) factor = f;
  if (t.empty() || end == t.c_str() || factor == 0 || !std::isfinite(v) || v <= 0)
    return Status(Code::kInvalidArgument, fmt::format("{}: '{}' is not a positive quantity ({})", var, text, accepted));
  return v * factor;
}

// "VALUE" or "host=VALUE,net=VALUE": calls set(class, text) for each part.
template <typename SetFn>
Result<LinkSpec> applySpec(const std::string& var, const std::string& value, SetFn set) {
  LinkSpec spec;
  if (value.find('=') == std::string::npos) {
    TSR_RETURN_IF_ERROR(set(true, value));
    TSR_RETURN_IF_ERROR(set(false, value));
    spec.hostGiven = spec.netGiven = true;
    return spec;
  }
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    std::string part = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t eq = part.find('=');
    std::string key = eq == std::string::npos ? "" : lower(trim(part.substr(0, eq)));
    if (key != "host" && key != "net")
      return Status(Code::kInvalidArgument,
                    fmt::format("{}: '{}' is not host=VALUE or net=VALUE (in '{}')", var, part, value));
    TSR_RETURN_IF_ERROR(set(key == "host", part.substr(eq + 1)));
    (key == "host" ? spec.hostGiven : spec.netGiven) = true;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return spec;
}

}  // namespace

Result<LinkSpec> applyLinkBandwidth(const std::string& value, LinkModel& links) {
  static const std::vector<std::pair<const char*, double>> units = {
      {"", 1},     {"b", 1},          {"kb", 1e3},       {"mb", 1e6},
      {"gb", 1e9}, {"kbit", 1e3 / 8}, {"mbit", 1e6 / 8}, {"gbit", 1e9 / 8}};
  return applySpec("TSR_LINK_BW", value, [&](bool host, const std::string& text) -> Status {
    TSR_ASSIGN_OR_RETURN(double v,
                         parseQuantity("TSR_LINK_BW", text, units, "bytes/s, or with kb|mb|gb or kbit|mbit|gbit"));
    (host ? links.host : links.net).bytesPerSec = v;
    return Status::ok();
  });
}

Result<LinkSpec> applyLinkLatency(const std::string& value, LinkModel& links) {
  static const std::vector<std::pair<const char*, double>> units = {{"", 1e-6}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}};
  return applySpec("TSR_LINK_LAT", value, [&](bool host, const std::string& text) -> Status {
    TSR_ASSIGN_OR_RETURN(double v, parseQuantity("TSR_LINK_LAT", text, units, "microseconds, or with us|ms|s"));
    (host ? links.host : links.net).latencySec = v;
    return Status::ok();
  });
}

std::string describe(const LinkModel& links) {
  return fmt::format("host {:.1f} us {:.2f} GB/s, net {:.1f} us {:.3f} GB/s{}", links.host.latencySec * 1e6,
                     links.host.bytesPerSec / 1e9, links.net.latencySec * 1e6, links.net.bytesPerSec / 1e9,
                     links.netNics > 1 ? fmt::format(" x {} NICs", links.netNics) : "");
}

}  // namespace tsr::algorithms
