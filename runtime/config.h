// Config: the one table of Tessera's settings. Values come from the defaults, then TSR_*
// environment variables, then per-call key/value parameters (set()). Settings that other parts
// read themselves (the launch variables, TSR_COMPRESS_*) are in the table too, so tsr-info
// prints every one; tools/info/tests fails when a TSR_ name in the sources is missing here.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tsr::runtime {

enum class ValueKind { kInt, kString, kEnum };

struct ConfigEntry {
  const char* name;  // TSR_ variable name
  ValueKind kind;
  const char* defaultValue;
  const char* accepted;  // enum: '|'-separated values; int: "min..max"; string: for people only
  const char* description;
};

// Every setting, including those the launcher sets (TSR_RANK, ...).
const std::vector<ConfigEntry>& configTable();

using EnvMap = std::map<std::string, std::string>;

constexpr const char* kJobSecretVariable = "TSR_JOB_SECRET";

// A snapshot of the process environment (the only getenv in Tessera). TSR_JOB_SECRET is taken
// out of the environment at the first snapshot that has it (child processes do not inherit
// it) and is in every later snapshot of this process, unless set anew.
EnvMap processEnvironment();

class Config {
 public:
  // Defaults only.
  Config();
  // Defaults overridden by the TSR_* entries of env; unknown TSR_ names become warnings that
  // suggest the closest known name; bad values are errors naming variable and value.
  static Result<Config> fromEnvironment(const EnvMap& env);

  // Sets one value by name (with or without the TSR_ prefix, any case).
  Status set(const std::string& name, const std::string& value);
  const std::string& get(const std::string& name) const;
  int64_t getInt(const std::string& name) const;
  // Whether the value was given (environment or set()), not left at its default.
  bool isSet(const std::string& name) const;

  int timeoutMs() const { return static_cast<int>(getInt("TSR_TIMEOUT_MS")); }
  int bootstrapTimeoutMs() const { return static_cast<int>(getInt("TSR_BOOTSTRAP_TIMEOUT_MS")); }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> given_;
  std::vector<std::string> warnings_;
};

// Closest name in the table by edit distance ("" when nothing is close).
std::string closestConfigName(const std::string& name);

// Key/value parameters given at creation (tsr_comm_init_config, Python's init(**params)), in
// order: a launch key (rank, size, local_rank, local_size, peers, secret) becomes the variable a
// launcher would set in `env` (TSR_RANK, ...); any other key is a setting, set on `config`
// (with or without TSR_, any case) and in `env` under its TSR_ name. An unknown setting or a
// bad value fails naming it (Config::set).
using InitParams = std::vector<std::pair<std::string, std::string>>;
Status applyInitParams(const InitParams& params, Config& config, EnvMap& env);

}  // namespace tsr::runtime
