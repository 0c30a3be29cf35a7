// TSR_* settings as the environment and per-call parameters give them (config.h): names and
// values are whatever the user typed. Checks that every accepted value is in its table range.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "runtime/config.h"

using namespace tsr::runtime;

namespace {

// What the table promises of an accepted value.
void checkAccepted(const Config& c) {
  for (const ConfigEntry& e : configTable()) {
    if (e.kind == ValueKind::kInt) {
      long long lo = 0, hi = 0;
      std::sscanf(e.accepted, "%lld..%lld", &lo, &hi);
      int64_t v = c.getInt(e.name);
      if (v < lo || v > hi) __builtin_trap();
    } else if (e.kind == ValueKind::kEnum) {
      const std::string& value = c.get(e.name);
      if (value.empty() && !*e.defaultValue) continue;  // unset, where the default is none
      std::string accepted = std::string("|") + e.accepted + "|";
      if (accepted.find("|" + value + "|") == std::string::npos) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  if (in.ConsumeBool()) {
    // An environment: NAME=VALUE lines (names and values hold no NUL and no '=' in the name).
    EnvMap env;
    while (in.remaining_bytes() > 0) {
      std::string line = in.ConsumeRandomLengthString(256);
      size_t eq = line.find('=');
      if (eq == std::string::npos || line.find('\0') != std::string::npos) continue;
      env[line.substr(0, eq)] = line.substr(eq + 1);
    }
    auto config = Config::fromEnvironment(env);
    if (config.isOk()) checkAccepted(config.value());
    return 0;
  }
  // set() pairs, as the C and Python APIs pass them (any bytes).
  Config config;
  while (in.remaining_bytes() > 0) {
    std::string name = in.ConsumeRandomLengthString(64);
    std::string value = in.ConsumeRandomLengthString(64);
    if (config.set(name, value).isOk() && config.get(name) != value) __builtin_trap();
  }
  checkAccepted(config);
  return 0;
}
