#include "tools/bench/cluster_summary.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace tsr::tools::bench {

namespace {

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// "a, b, c, d,e" -> {"a", "b", "c", "d,e"}: the first three comma-separated parts without their
// leading spaces, then the settings whole (a value such as UCX_TLS=tcp,self has commas too).
std::vector<std::string> commaParts(const std::string& text) {
  std::vector<std::string> parts;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = parts.size() < 3 ? text.find(',', at) : std::string::npos;
    std::string part = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    part.erase(0, part.find_first_not_of(' '));
    parts.push_back(part);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return parts;
}

// "## Tessera tsr-bench --algo ring, 4 hosts x 1 ranks, 10gbit, TSR_WAIT=spin" -> "ring
// TSR_WAIT=spin"; the peers by name, with their settings ("## PyTorch gloo, N=4, 10gbit,
// sndbuf=65536" -> "gloo sndbuf=65536"). Empty: not a benchmark section.
std::string labelOf(const std::string& header, bool* peer) {
  *peer = true;
  // Not "## Open MPI failed (1)" or "## gloo: python3-torch not installed": notes, not runs.
  std::string name;
  if (startsWith(header, "## Open MPI MPI_Allreduce")) name = "Open MPI";
  if (startsWith(header, "## PyTorch gloo,")) name = "gloo";
  if (!name.empty()) {
    // parts: name, "N=n", rate[, settings]
    std::vector<std::string> parts = commaParts(header);
    return parts.size() > 3 ? name + " " + parts[3] : name;
  }
  const std::string tessera = "## Tessera tsr-bench ";
  if (!startsWith(header, tessera)) return "";
  *peer = false;
  // parts: args, "N hosts x R ranks", rate[, settings]
  std::vector<std::string> parts = commaParts(header.substr(tessera.size()));
  std::string label = parts.empty() ? "" : parts[0];
  if (startsWith(label, "--algo ")) label = label.substr(7);
  if (parts.size() > 3) label += (label.empty() ? "" : " ") + parts[3];
  return label.empty() ? "tessera" : label;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t k = v.size();
  return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

std::string sizeName(long long bytes) {
  char buf[32];
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0)
    std::snprintf(buf, sizeof buf, "%lld MiB", bytes >> 20);
  else if (bytes >= 1024 && bytes % 1024 == 0)
    std::snprintf(buf, sizeof buf, "%lld KiB", bytes >> 10);
  else
    std::snprintf(buf, sizeof buf, "%lld B", bytes);
  return buf;
}

}  // namespace

ClusterRun parseClusterRun(std::istream& in) {
  ClusterRun run;
  SeriesRuns* current = nullptr;
  for (std::string line; std::getline(in, line);) {
    if (startsWith(line, "## ")) {
      bool peer = false;
      std::string label = labelOf(line, &peer);
      current = nullptr;
      if (label.empty()) continue;
      auto it =
          std::find_if(run.series.begin(), run.series.end(), [&](const SeriesRuns& s) { return s.label == label; });
      if (it == run.series.end()) it = run.series.insert(run.series.end(), SeriesRuns{label, peer, {}});
      it->repeats.emplace_back();
      current = &*it;
      continue;
    }
    if (!current) continue;
    std::string row = line;
    if (startsWith(row, "[0]"))
      row = row.substr(3);
    else if (startsWith(row, "["))
      continue;  // another rank's line
    std::stringstream fields(row);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    // size count iters time min max algbw busbw floor x_floor ok ("-": not checked)
    if (f.size() != 11 || f[0][0] == '#' || (f[10] != "OK" && f[10] != "-")) continue;
    try {
      current->repeats.back()[std::stoll(f[0])] = std::stod(f[7]);
    } catch (...) {
      continue;  // not a row
    }
  }
  return run;
}

std::string formatClusterSummary(const ClusterRun& run) {
  std::vector<const SeriesRuns*> peers;
  for (const auto& s : run.series)
    if (s.peer) peers.push_back(&s);
  std::ostringstream out;
  char buf[256];
  bool any = false;
  for (const auto& s : run.series) {
    if (s.peer) continue;
    std::map<long long, std::vector<double>> bySize;
    for (const auto& rep : s.repeats)
      for (const auto& [size, busbw] : rep) bySize[size].push_back(busbw);
    for (const auto& [size, values] : bySize) {
      if (!any) {
        out << "## Summary: median bus bandwidth over the repeats (GB/s); Tessera / peer as the\n"
               "## median of each repeat's ratio, with its range\n";
        any = true;
      }
      std::snprintf(buf, sizeof buf, "%-9s %-28s %6.3f (%zu)", sizeName(size).c_str(), s.label.c_str(), median(values),
                    values.size());
      out << buf;
      for (const SeriesRuns* p : peers) {
        std::vector<double> ratios;
        for (size_t r = 0; r < s.repeats.size() && r < p->repeats.size(); ++r) {
          auto mine = s.repeats[r].find(size), theirs = p->repeats[r].find(size);
          if (mine != s.repeats[r].end() && theirs != p->repeats[r].end() && theirs->second > 0)
            ratios.push_back(mine->second / theirs->second);
        }
        if (ratios.empty()) continue;
        auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
        std::snprintf(buf, sizeof buf, "  vs %s %.2fx (%.2f-%.2f)", p->label.c_str(), median(ratios), *lo, *hi);
        out << buf;
      }
      out << "\n";
    }
  }
  return out.str();
}

}  // namespace tsr::tools::bench
