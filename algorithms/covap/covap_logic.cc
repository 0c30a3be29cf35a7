#include "algorithms/covap/covap_logic.h"

#include <algorithm>
#include <cmath>

namespace tsr::covap {

namespace {

Status bad(const std::string& key, const std::string& value, const std::string& accepted) {
  return Status(Code::kInvalidArgument, "covap: " + key + "=" + value + " is not accepted (" + accepted + ")");
}

bool toNumber(const std::string& s, double* out) {
  try {
    size_t end = 0;
    *out = std::stod(s, &end);
    return end == s.size() && std::isfinite(*out);
  } catch (...) {
    return false;
  }
}

double plainMedian(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

Result<Params> parseParams(const std::map<std::string, std::string>& kv) {
  Params p;
  for (const auto& [key, value] : kv) {
    double v = 0;
    bool isInt = toNumber(value, &v) && v == std::floor(v);
    if (key == "interval") {
      if (value == "auto")
        p.interval = 0;
      else if (isInt && v >= 1 && v <= 1000000)
        p.interval = static_cast<int>(v);
      else
        return bad(key, value, "auto or an integer >= 1");
    } else if (key == "max_interval") {
      if (!isInt || v < 1 || v > 1000000) return bad(key, value, "an integer >= 1");
      p.maxInterval = static_cast<int>(v);
    } else if (key == "profile_steps") {
      if (!isInt || v < 1 || v > 1000) return bad(key, value, "an integer in 1..1000");
      p.profileSteps = static_cast<int>(v);
    } else if (key == "ef_init") {
      if (!toNumber(value, &v) || v < 0 || v > 1) return bad(key, value, "a number in [0, 1]");
      p.efInit = v;
    } else if (key == "ef_ascend_steps") {
      if (!isInt || v < 1) return bad(key, value, "an integer >= 1");
      p.efAscendSteps = static_cast<int>(v);
    } else if (key == "ef_ascend_range") {
      if (!toNumber(value, &v) || v < 0 || v > 1) return bad(key, value, "a number in [0, 1]");
      p.efAscendRange = v;
    } else {
      return Status(Code::kInvalidArgument, "covap: unknown parameter " + key + "=" + value +
                                                " (accepted: interval, max_interval, profile_steps, ef_init, "
                                                "ef_ascend_steps, ef_ascend_range)");
    }
  }
  return p;
}

int intervalFromCcr(double ccr, int maxInterval) {
  if (!(ccr > 1)) return 1;
  int interval = static_cast<int>(std::ceil(std::min(ccr, 1e6)));
  return maxInterval > 0 ? std::min(interval, maxInterval) : interval;
}

double shardingMedian(const std::vector<size_t>& counts) {
  std::vector<double> all(counts.begin(), counts.end());
  double m = plainMedian(all);
  std::vector<double> ordinary;
  for (double c : all)
    if (m <= 0 || std::floor(c / m) < 2) ordinary.push_back(c);
  return ordinary.empty() ? m : plainMedian(ordinary);
}

std::vector<Shard> shardBuckets(const std::vector<size_t>& counts, int interval) {
  std::vector<Shard> shards;
  double median = shardingMedian(counts);
  for (size_t b = 0; b < counts.size(); ++b) {
    size_t parts = median > 0 ? static_cast<size_t>(std::floor(counts[b] / median)) : 1;
    parts = std::min<size_t>(parts, static_cast<size_t>(std::max(1, interval)));
    if (parts < 2) parts = 1;
    size_t base = counts[b] / parts, extra = counts[b] % parts, at = 0;
    for (size_t i = 0; i < parts; ++i) {
      size_t n = base + (i < extra ? 1 : 0);
      shards.push_back({b, at, n});
      at += n;
    }
  }
  return shards;
}

double efCoefficient(uint64_t step, const Params& p) {
  double c = p.efInit + std::floor(static_cast<double>(step) / p.efAscendSteps) * p.efAscendRange;
  return std::min(c, 1.0);
}

}  // namespace tsr::covap
