#include "algorithms/compress/registry.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include "algorithms/compress/cast_compressor.h"
#include "algorithms/compress/dithering_compressor.h"
#include "algorithms/compress/error_feedback.h"
#include "algorithms/compress/momentum.h"
#include "algorithms/compress/onebit_compressor.h"
#include "algorithms/compress/randomk_compressor.h"
#include "algorithms/compress/topk_compressor.h"

extern char** environ;

namespace tsr::compress {
namespace {

Status badValue(const std::string& key, const std::string& value, const std::string& accepted) {
  return Status(Code::kInvalidArgument,
                "compressor parameter '" + key + "' has bad value '" + value + "'; accepted: " + accepted);
}

// Looks up `key`; returns the default when absent and marks it used.
class Reader {
 public:
  explicit Reader(const Params& p) : params_(p) {}
  const std::string* find(const std::string& key) {
    used_.insert(key);
    auto it = params_.find(key);
    return it == params_.end() ? nullptr : &it->second;
  }
  // The first key that was never asked for, if any.
  const std::pair<const std::string, std::string>* firstUnused() const {
    for (const auto& kv : params_)
      if (!used_.count(kv.first)) return &kv;
    return nullptr;
  }

 private:
  const Params& params_;
  std::set<std::string> used_;
};

bool parseU64(const std::string& s, uint64_t* out) {
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parseDouble(const std::string& s, double* out) {
  if (s.empty()) return false;
  try {
    size_t used = 0;
    *out = std::stod(s, &used);
    return used == s.size() && std::isfinite(*out);
  } catch (...) {
    return false;
  }
}

bool parseBool(const std::string& s, bool* out) {
  if (s == "true" || s == "1") return *out = true, true;
  if (s == "false" || s == "0") return *out = false, true;
  return false;
}

// k for topk / randomk: count or ratio.
Result<size_t> parseSparseK(const std::string& value, size_t count) {
  const std::string accepted = "a positive count (e.g. 100) or a ratio in (0, 1) (e.g. 0.01)";
  if (value.find_first_of(".eE") != std::string::npos) {
    double r;
    if (!parseDouble(value, &r) || r <= 0.0 || r >= 1.0) return badValue("k", value, accepted);
    double k = std::ceil(r * static_cast<double>(count));
    return static_cast<size_t>(std::max(1.0, k));
  }
  uint64_t k;
  if (!parseU64(value, &k) || k == 0) return badValue("k", value, accepted);
  return static_cast<size_t>(std::min<uint64_t>(k, count));
}

Status notApplicable(const std::string& key, const std::string& value, const std::string& compressor) {
  return Status(Code::kInvalidArgument, "compressor parameter '" + key + "' = '" + value +
                                            "' does not apply to compressor '" + compressor + "'");
}

}  // namespace

const std::vector<std::string>& compressorKeys() {
  static const std::vector<std::string> keys = {
      "compressor",          "k",  "scaling",  "scale_block", "dithering_partition",
      "dithering_normalize", "ef", "momentum", "momentum_mu", "seed"};
  return keys;
}

Result<std::unique_ptr<Compressor>> createCompressor(const Params& params, size_t count) {
  if (count > 0xffffffffull)
    return Status(Code::kInvalidArgument, "compressor: tensor of " + std::to_string(count) +
                                              " elements exceeds the 2^32 - 1 limit of the payload indices");
  const std::set<std::string> known(compressorKeys().begin(), compressorKeys().end());
  std::string keyList;
  for (const auto& k : compressorKeys()) keyList += (keyList.empty() ? "" : ", ") + k;
  for (const auto& kv : params)
    if (!known.count(kv.first))
      return Status(Code::kInvalidArgument,
                    "unknown compressor parameter '" + kv.first + "' = '" + kv.second + "'; accepted keys: " + keyList);
  Reader r(params);
  const std::string kinds = "onebit, topk, randomk, dithering, fp16, bf16, none";
  const std::string* kind = r.find("compressor");
  if (!kind) return Status(Code::kInvalidArgument, "compressor parameter 'compressor' is required; accepted: " + kinds);

  uint64_t seed = 0;
  if (const std::string* v = r.find("seed"); v && !parseU64(*v, &seed))
    return badValue("seed", *v, "an unsigned 64-bit integer");

  std::unique_ptr<Compressor> c;
  if (*kind == "onebit") {
    bool scaling = false;
    if (const std::string* v = r.find("scaling"); v && !parseBool(*v, &scaling))
      return badValue("scaling", *v, "true, false");
    uint64_t block = 0;
    if (const std::string* v = r.find("scale_block")) {
      if (!parseU64(*v, &block) || block % 64 != 0 || block > 0xffffffffull)
        return badValue("scale_block", *v, "0 (one scale) or a multiple of 64 (e.g. 4096)");
    }
    c = std::make_unique<OnebitCompressor>(count, scaling, seed, static_cast<size_t>(block));
  } else if (*kind == "topk" || *kind == "randomk") {
    const std::string* v = r.find("k");
    if (!v)
      return Status(Code::kInvalidArgument,
                    "compressor parameter 'k' is required for compressor '" + *kind +
                        "'; accepted: a positive count (e.g. 100) or a ratio in (0, 1) (e.g. 0.01)");
    TSR_ASSIGN_OR_RETURN(size_t k, parseSparseK(*v, count));
    if (*kind == "topk") {
      c = std::make_unique<TopkCompressor>(count, k);
    } else {
      c = std::make_unique<RandomkCompressor>(count, k, seed);
    }
  } else if (*kind == "dithering") {
    auto partition = kernels::DitherPartition::kLinear;
    auto normalize = kernels::DitherNormalize::kMax;
    if (const std::string* v = r.find("dithering_partition")) {
      if (*v == "natural") {
        partition = kernels::DitherPartition::kNatural;
      } else if (*v != "linear") {
        return badValue("dithering_partition", *v, "linear, natural");
      }
    }
    if (const std::string* v = r.find("dithering_normalize")) {
      if (*v == "l2") {
        normalize = kernels::DitherNormalize::kL2;
      } else if (*v != "max") {
        return badValue("dithering_normalize", *v, "max, l2");
      }
    }
    const std::string* v = r.find("k");
    const std::string accepted = partition == kernels::DitherPartition::kLinear
                                     ? "a number of levels in 1..32767"
                                     : "a number of levels in 1..15 (natural partition)";
    if (!v)
      return Status(Code::kInvalidArgument,
                    "compressor parameter 'k' is required for compressor 'dithering'; accepted: " + accepted);
    uint64_t levels;
    if (!parseU64(*v, &levels) || levels > 0xffffffffull ||
        kernels::ditherMaxCode(static_cast<uint32_t>(levels), partition) == 0)
      return badValue("k", *v, accepted);
    c = std::make_unique<DitheringCompressor>(count, static_cast<uint32_t>(levels), partition, normalize, seed);
  } else if (*kind == "fp16") {
    c = std::make_unique<CastCompressor>(count, CastCompressor::Kind::kF16);
  } else if (*kind == "bf16") {
    c = std::make_unique<CastCompressor>(count, CastCompressor::Kind::kBf16);
  } else if (*kind == "none") {
    c = std::make_unique<CastCompressor>(count, CastCompressor::Kind::kNone);
  } else {
    return badValue("compressor", *kind, kinds);
  }

  if (const std::string* v = r.find("ef")) {
    if (*v == "vanilla") {
      c = std::make_unique<ErrorFeedback>(std::move(c));
    } else if (*v != "none") {
      return badValue("ef", *v, "vanilla, none");
    }
  }
  const std::string* mom = r.find("momentum");
  if (mom && *mom != "nesterov" && *mom != "none") return badValue("momentum", *mom, "nesterov, none");
  if (mom && *mom == "nesterov") {
    double mu = 0.9;
    if (const std::string* v = r.find("momentum_mu"); v && (!parseDouble(*v, &mu) || mu < 0.0 || mu >= 1.0))
      return badValue("momentum_mu", *v, "a number in [0, 1)");
    c = std::make_unique<NesterovMomentum>(std::move(c), static_cast<float>(mu));
  }
  if (const auto* unused = r.firstUnused()) {
    if (unused->first == "momentum_mu")
      return Status(Code::kInvalidArgument,
                    "compressor parameter 'momentum_mu' = '" + unused->second + "' needs momentum=nesterov");
    return notApplicable(unused->first, unused->second, *kind);
  }
  return c;
}

Result<Params> withEnvironmentDefaults(const Params& params, const std::map<std::string, std::string>& env) {
  static const std::string prefix = "TSR_COMPRESS_";
  Params out = params;
  for (const auto& [name, value] : env) {
    if (name.rfind(prefix, 0) != 0) continue;
    std::string key = name.substr(prefix.size());
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const auto& keys = compressorKeys();
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string list;
      for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
      return Status(Code::kInvalidArgument, "environment variable " + name + "=" + value +
                                                " names no compressor parameter (accepted: " + list + ")");
    }
    out.emplace(key, value);  // explicit parameters win
  }
  return out;
}

Status nameEnvironmentSource(const Status& st, const Params& given, const Params& completed) {
  if (st.isOk()) return st;
  for (const auto& [key, value] : completed) {
    if (given.count(key) || st.message().find("'" + key + "'") == std::string::npos) continue;
    std::string name = "TSR_COMPRESS_" + key;
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return Status(st.code(), st.message() + " (from " + name + "=" + value + ")");
  }
  return st;
}

Status checkEnvironment(const std::map<std::string, std::string>& env) {
  TSR_ASSIGN_OR_RETURN(Params fromEnv, withEnvironmentDefaults({}, env));
  if (fromEnv.empty()) return Status::ok();
  std::vector<std::string> kinds = {"onebit", "topk", "randomk", "dithering", "fp16", "bf16", "none"};
  if (fromEnv.count("compressor")) kinds = {fromEnv.at("compressor")};
  Status first;  // the error of the compressor that takes the most of them
  for (const std::string& kind : kinds) {
    Params given = fromEnv;
    given.emplace("compressor", kind);
    if (kind == "topk" || kind == "randomk" || kind == "dithering") given.emplace("k", "1");
    if (given.count("momentum_mu")) given.emplace("momentum", "nesterov");
    auto built = createCompressor(given, size_t{1} << 20);
    if (built.isOk()) return Status::ok();
    const bool elsewhere = built.status().message().find("does not apply") != std::string::npos;
    if (first.isOk() || (!elsewhere && first.message().find("does not apply") != std::string::npos))
      first = nameEnvironmentSource(built.status(), {}, fromEnv);
  }
  return first;
}

Result<Params> withEnvironmentDefaults(const Params& params) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos && kv.rfind("TSR_COMPRESS_", 0) == 0) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return withEnvironmentDefaults(params, env);
}

}  // namespace tsr::compress
