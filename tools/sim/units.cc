#include "tools/sim/units.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

namespace tsr::sim {

namespace {

// Splits "12.5GiB" into 12.5 and "GiB"; false when no number leads or it is negative.
bool splitNumber(const std::string& text, double* value, std::string* unit) {
  const char* begin = text.c_str();
  char* end = nullptr;
  *value = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(*value) || *value < 0) return false;
  *unit = std::string(end);
  while (!unit->empty() && unit->front() == ' ') unit->erase(unit->begin());
  return true;
}

Result<double> scaled(const std::string& text, const char* what,
                      const std::vector<std::pair<const char*, double>>& units) {
  double value = 0;
  std::string unit;
  if (!splitNumber(text, &value, &unit))
    return Status(Code::kInvalidArgument, std::string(what) + " '" + text + "': no number");
  for (const auto& [name, factor] : units)
    if (unit == name) return value * factor;
  return Status(Code::kInvalidArgument, std::string(what) + " '" + text + "': unknown unit '" + unit + "'");
}

}  // namespace

Result<double> parseRate(const std::string& text) {
  return scaled(text, "rate",
                {{"", 1},
                 {"bps", 1 / 8.0},
                 {"Kbps", 1e3 / 8},
                 {"kbps", 1e3 / 8},
                 {"Mbps", 1e6 / 8},
                 {"Gbps", 1e9 / 8},
                 {"Tbps", 1e12 / 8},
                 {"Bps", 1},
                 {"B/s", 1},
                 {"KBps", 1e3},
                 {"kB/s", 1e3},
                 {"KB/s", 1e3},
                 {"MBps", 1e6},
                 {"MB/s", 1e6},
                 {"GBps", 1e9},
                 {"GB/s", 1e9},
                 {"TBps", 1e12},
                 {"TB/s", 1e12}});
}

Result<double> parseTime(const std::string& text) {
  return scaled(text, "time", {{"", 1}, {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}});
}

std::string formatBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g %s", bytes, units[u]);
  return buf;
}

std::string formatRate(double bytesPerSec) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g GB/s", bytesPerSec / 1e9);
  return buf;
}

std::string formatTime(double seconds) {
  char buf[64];
  if (seconds >= 1)
    std::snprintf(buf, sizeof buf, "%.4g s", seconds);
  else if (seconds >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.4g ms", seconds * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.4g us", seconds * 1e6);
  return buf;
}

}  // namespace tsr::sim
