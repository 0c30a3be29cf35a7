#include "algorithms/selsync/selsync_logic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tsr::selsync {

namespace {

Status bad(const std::string& key, const std::string& value, const std::string& accepted) {
  return Status(Code::kInvalidArgument, "selsync: " + key + "=" + value + " is not accepted (" + accepted + ")");
}

bool toDouble(const std::string& s, double* out) {
  try {
    size_t end = 0;
    *out = std::stod(s, &end);
    return end == s.size() && std::isfinite(*out);
  } catch (...) {
    return false;
  }
}

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

double defaultAlpha(int worldSize) { return std::clamp(worldSize / 100.0, 0.01, 1.0); }

Result<Params> parseParams(const std::map<std::string, std::string>& kv, int worldSize) {
  Params p;
  for (const auto& [key, value] : kv) {
    double v = 0;
    if (key == "delta") {
      if (!toDouble(value, &v) || v < 0) return bad(key, value, "a number >= 0");
      p.delta = v;
    } else if (key == "ewma_window") {
      if (!toDouble(value, &v) || v < 1 || v > 100000 || v != std::floor(v))
        return bad(key, value, "an integer in 1..100000");
      p.ewmaWindow = static_cast<int>(v);
    } else if (key == "ewma_alpha") {
      if (!toDouble(value, &v) || v <= 0 || v > 1) return bad(key, value, "a number in (0, 1]");
      p.ewmaAlpha = v;
    } else if (key == "aggregate") {
      if (value == "params")
        p.aggregate = Aggregate::kParams;
      else if (value == "grads")
        p.aggregate = Aggregate::kGrads;
      else
        return bad(key, value, "params|grads");
    } else if (key == "memory") {
      if (value != "host" && value != "cuda") return bad(key, value, "host|cuda");
      p.cudaBuckets = value == "cuda";
    } else {
      return Status(Code::kInvalidArgument, "selsync: unknown parameter " + key + "=" + value +
                                                " (accepted: delta, ewma_window, ewma_alpha, aggregate, memory)");
    }
  }
  // The seed's smoothing factor N/100 (0.16 for 16 workers), kept inside (0, 1].
  if (p.ewmaAlpha == 0) p.ewmaAlpha = defaultAlpha(worldSize);
  return p;
}

double GradientChange::smoothed() const {
  double s = history_.front();
  for (size_t i = 1; i < history_.size(); ++i) s = alpha_ * history_[i] + (1 - alpha_) * s;
  return s;
}

Result<double> GradientChange::add(double x) {
  if (!std::isfinite(x) || x < 0)
    return Status(Code::kNumericError,
                  "selsync: squared gradient norm " + std::to_string(x) + " is not a finite non-negative number");
  history_.push_back(x);
  while (history_.size() > window_) history_.pop_front();
  double s = smoothed();
  double prev = previous_;
  bool first = !hasPrevious_;
  previous_ = s;
  hasPrevious_ = true;
  if (first) return 0.0;  // no previous norm: no change can be measured
  if (prev == 0) return s == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::fabs(s - prev) / prev;
}

std::vector<uint64_t> flagWords(int worldSize, int rank, bool flag) {
  std::vector<uint64_t> words((worldSize + 63) / 64, 0);
  if (flag) words[rank / 64] |= uint64_t{1} << (rank % 64);
  return words;
}

bool anyFlag(const std::vector<uint64_t>& words) {
  return std::any_of(words.begin(), words.end(), [](uint64_t w) { return w != 0; });
}

std::string flaggedRankList(const std::vector<uint64_t>& words) {
  std::string out;
  for (size_t w = 0; w < words.size(); ++w)
    for (int b = 0; b < 64; ++b)
      if (words[w] >> b & 1u) out += (out.empty() ? "" : ", ") + std::to_string(w * 64 + b);
  return out;
}

namespace {
constexpr size_t kCodeSlots = static_cast<size_t>(Code::kRevoked) + 1;
}  // namespace

std::vector<uint64_t> exchangeWords(int worldSize, int rank, bool flagged, Code failure) {
  const size_t words = (static_cast<size_t>(worldSize) + 63) / 64;
  std::vector<uint64_t> out = flagWords(worldSize, rank, flagged),
                        lost = flagWords(worldSize, rank, failure != Code::kOk);
  out.insert(out.end(), lost.begin(), lost.end());
  out.resize(2 * words + kCodeSlots, 0);
  if (failure != Code::kOk) {
    const auto slot = static_cast<size_t>(failure);
    out[2 * words + (slot < kCodeSlots ? slot : static_cast<size_t>(Code::kInternal))] = 1;
  }
  return out;
}

Exchange readExchange(int worldSize, const std::vector<uint64_t>& summed) {
  const size_t words = (static_cast<size_t>(worldSize) + 63) / 64;
  Exchange e;
  e.flags.assign(summed.begin(), summed.begin() + words);
  e.failing.assign(summed.begin() + words, summed.begin() + 2 * words);
  for (size_t c = 0; c < kCodeSlots && e.failure == Code::kOk; ++c)
    if (summed[2 * words + c] > 0) e.failure = static_cast<Code>(c);
  if (e.failure == Code::kOk && anyFlag(e.failing)) e.failure = Code::kInternal;
  return e;
}

std::vector<size_t> seldpOrder(size_t numSamples, int worldSize, int rank) {
  std::vector<size_t> order;
  order.reserve(numSamples);
  size_t chunk = numSamples / worldSize;
  for (int k = 0; k < worldSize; ++k) {
    int c = (rank + k) % worldSize;
    size_t begin = c * chunk, end = c == worldSize - 1 ? numSamples : begin + chunk;
    for (size_t i = begin; i < end; ++i) order.push_back(i);
  }
  return order;
}

std::vector<int> injectionRanks(uint64_t seed, uint64_t step, int worldSize, double alpha) {
  int k = std::min(worldSize, static_cast<int>(std::ceil(alpha * worldSize - 1e-12)));
  std::vector<int> ranks(worldSize);
  std::iota(ranks.begin(), ranks.end(), 0);
  uint64_t state = seed ^ (step * 0xD1B54A32D192ED03ull);
  for (int i = worldSize - 1; i > 0; --i) std::swap(ranks[i], ranks[splitmix64(state) % (i + 1)]);
  ranks.resize(std::max(0, k));
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

int injectedLocalBatch(int batch, double alpha, double beta, int worldSize) {
  return std::max(1, static_cast<int>(std::floor(batch / (1.0 + alpha * beta * worldSize))));
}

}  // namespace tsr::selsync
