#include "tools/soak/soak_plan.h"

#include <algorithm>
#include <sstream>

namespace tsr::tools::soak {

const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kAllreduce:
      return "allreduce";
    case Collective::kAllgather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kBarrier:
      return "barrier";
  }
  return "?";
}

bool Setup::servesCollective(Collective c) const { return std::find(serves.begin(), serves.end(), c) != serves.end(); }

std::string Setup::describe(int size) const {
  std::string hosts = ranksPerHost <= 0   ? "one host"
                      : ranksPerHost == 1 ? std::to_string(size) + " hosts of 1 rank"
                                          : std::to_string(size / ranksPerHost) + " hosts of " +
                                                std::to_string(ranksPerHost) + " ranks";
  return name + ": TSR_ALGO=" + algo + ", " + hosts;
}

std::vector<Setup> defaultSetups(int size) {
  using C = Collective;
  const std::vector<C> all(std::begin(kAllCollectives), std::end(kAllCollectives));
  std::vector<Setup> setups = {
      {"shm", "shm", 0, all},
      // ring forces the ring for allreduce, all-gather and reduce-scatter; with the segment off,
      // broadcasts go down the binomial tree and barriers by dissemination.
      {"ring", "ring", 0, all},
      {"rabenseifner", "rabenseifner", 0, {C::kAllreduce}},
      {"doubling", "doubling", 0, {C::kAllreduce}},
      {"bruck", "bruck", 0, {C::kAllgather}},
  };
  // The torus and two-level allreduces need equal hosts of 2 or more ranks, 2 or more hosts.
  for (int perHost = 2; perHost * 2 <= size; ++perHost)
    if (size % perHost == 0) {
      setups.push_back({"torus", "torus", perHost, {C::kAllreduce}});
      setups.push_back({"hier", "hier", perHost, {C::kAllreduce}});
      break;
    }
  if (size >= 2) setups.push_back({"ring-hosts", "ring", 1, all});
  return setups;
}

Result<std::vector<Setup>> selectSetups(int size, const std::string& names) {
  std::vector<Setup> known = defaultSetups(size);
  if (names == "all" || names.empty()) return known;
  std::vector<Setup> chosen;
  std::stringstream list(names);
  for (std::string name; std::getline(list, name, ',');) {
    auto it = std::find_if(known.begin(), known.end(), [&](const Setup& s) { return s.name == name; });
    if (it == known.end()) {
      std::string names;
      for (const Setup& s : known) names += (names.empty() ? "" : ", ") + s.name;
      return Status(Code::kInvalidArgument, "--algos: unknown or unusable with " + std::to_string(size) + " ranks: '" +
                                                name + "' (known: " + names + ")");
    }
    if (std::none_of(chosen.begin(), chosen.end(), [&](const Setup& s) { return s.name == name; }))
      chosen.push_back(*it);
  }
  if (chosen.empty()) return Status(Code::kInvalidArgument, "--algos: no setup named");
  return chosen;
}

size_t inputCount(const Op& op, int size) {
  return op.collective == Collective::kReduceScatter ? op.count * static_cast<size_t>(size) : op.count;
}

size_t outputCount(const Op& op, int size) {
  return op.collective == Collective::kAllgather ? op.count * static_cast<size_t>(size) : op.count;
}

size_t largestBufferBytes(const Op& op, int size) {
  return std::max(inputCount(op, size), outputCount(op, size)) * dataTypeSize(op.dtype);
}

std::string describeOp(const Op& op) {
  std::string s = collectiveName(op.collective);
  if (op.collective == Collective::kBarrier) return s;
  s += std::string(" ") + dataTypeName(op.dtype);
  if (op.collective == Collective::kAllreduce || op.collective == Collective::kReduceScatter)
    s += std::string(" ") + reduceOpName(op.op);
  s += " count " + std::to_string(op.count);
  if (op.collective == Collective::kBroadcast) s += " root " + std::to_string(op.root);
  if (op.inPlace) s += " in-place";
  return s;
}

OpGenerator::OpGenerator(uint64_t seed, int size, size_t maxBytes, int maxInFlight, std::vector<Setup> setups)
    : state_(seed),
      size_(std::max(1, size)),
      maxBytes_(maxBytes),
      maxInFlight_(std::max(1, maxInFlight)),
      setups_(std::move(setups)) {}

uint64_t OpGenerator::random() {  // SplitMix64
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t OpGenerator::below(uint64_t n) { return n <= 1 ? 0 : random() % n; }

size_t OpGenerator::drawCount(size_t maxCount) {
  if (maxCount == 0 || below(32) == 0) return 0;
  int bits = 0;
  while (bits < 64 && (maxCount >> bits) != 0) ++bits;               // maxCount < 2^bits
  int b = 1 + static_cast<int>(below(static_cast<uint64_t>(bits)));  // 1..bits
  size_t lo = size_t{1} << (b - 1);
  size_t hi = std::min(maxCount, b >= 64 ? maxCount : (size_t{1} << b) - 1);
  return lo + below(hi - lo + 1);
}

Op OpGenerator::next() {
  struct Weighted {
    Collective c;
    int weight;
  };
  static constexpr Weighted kWeights[] = {{Collective::kAllreduce, 35},
                                          {Collective::kAllgather, 20},
                                          {Collective::kReduceScatter, 20},
                                          {Collective::kBroadcast, 15},
                                          {Collective::kBarrier, 10}};
  auto served = [&](Collective c) {
    return std::any_of(setups_.begin(), setups_.end(), [&](const Setup& s) { return s.servesCollective(c); });
  };
  int total = 0;
  for (const Weighted& w : kWeights) total += served(w.c) ? w.weight : 0;
  Op op;
  op.index = index_++;
  int pick = static_cast<int>(below(static_cast<uint64_t>(std::max(total, 1))));
  for (const Weighted& w : kWeights) {
    if (!served(w.c)) continue;
    op.collective = w.c;
    if (pick < w.weight) break;
    pick -= w.weight;
  }
  std::vector<int> candidates;
  for (size_t i = 0; i < setups_.size(); ++i)
    if (setups_[i].servesCollective(op.collective)) candidates.push_back(static_cast<int>(i));
  op.setup = candidates.empty() ? 0 : candidates[below(candidates.size())];
  op.dtype = static_cast<DataType>(below(kNumDataTypes));
  // The bitwise ops take integers only.
  op.op = static_cast<ReduceOp>(below(isFloatType(op.dtype) ? kNumArithmeticOps : kNumReduceOps));
  op.root = static_cast<int>(below(static_cast<uint64_t>(size_)));
  op.inPlace = below(2) == 1;
  op.salt = static_cast<uint32_t>(random());
  size_t perElement = dataTypeSize(op.dtype);
  if (op.collective == Collective::kAllgather || op.collective == Collective::kReduceScatter)
    perElement *= static_cast<size_t>(size_);
  op.count = drawCount(maxBytes_ / perElement);
  // What a collective does not take is left at a fixed value, so a description shows only
  // what counts.
  bool reduces = op.collective == Collective::kAllreduce || op.collective == Collective::kReduceScatter;
  if (!reduces) op.op = ReduceOp::kSum;
  if (op.collective != Collective::kBroadcast) op.root = 0;
  if (op.collective != Collective::kAllreduce && op.collective != Collective::kBroadcast) op.inPlace = false;
  if (op.collective == Collective::kBarrier) {
    op.count = 0;
    op.dtype = DataType::kF32;
  }
  return op;
}

std::vector<Op> OpGenerator::nextBurst(uint64_t limit) {
  uint64_t n = std::min<uint64_t>(1 + below(static_cast<uint64_t>(maxInFlight_)), limit);
  std::vector<Op> burst;
  for (uint64_t i = 0; i < n; ++i) burst.push_back(next());
  return burst;
}

}  // namespace tsr::tools::soak
