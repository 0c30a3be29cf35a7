// tsr-info's settings section: every table entry once, with the environment's value as the
// current one, refused values counted, the job secret hidden, unknown names given a hint.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "algorithms/compress/registry.h"
#include "runtime/bootstrap/launch_env.h"
#include "runtime/config.h"
#include "tools/info/info.h"
#include "tools/tsrun/rank_plan.h"

namespace tsr::tools::info {
namespace {

// Lines of `text` that start with `prefix`.
int countLines(const std::string& text, const std::string& prefix) {
  int n = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    n += text.compare(start, prefix.size(), prefix) == 0 && end - start >= prefix.size();
    start = end + 1;
  }
  return n;
}

bool hasLine(const std::string& text, const std::string& prefix) { return countLines(text, prefix) > 0; }

TEST(SettingsReport, EveryEntryOnceWithItsDefault) {
  SettingsReport r = renderSettings({});
  EXPECT_EQ(r.invalid, 0);
  for (const runtime::ConfigEntry& e : runtime::configTable()) {
    const std::string line = std::string(e.name) + "=" + e.defaultValue + "  (";
    EXPECT_TRUE(hasLine(r.text, line)) << line << "\n" << r.text;
    EXPECT_EQ(countLines(r.text, std::string(e.name) + "="), 1) << e.name;
  }
}

TEST(SettingsReport, TheEnvironmentGivesTheCurrentValue) {
  SettingsReport r = renderSettings({{"TSR_CHUNK_BYTES", "262144"}, {"TSR_ALGO", "ring"}, {"HOME", "/root"}});
  EXPECT_EQ(r.invalid, 0);
  EXPECT_TRUE(hasLine(r.text, "TSR_CHUNK_BYTES=262144  (environment; default 524288;")) << r.text;
  EXPECT_TRUE(hasLine(r.text, "TSR_ALGO=ring  (environment; default auto;")) << r.text;
  EXPECT_TRUE(hasLine(r.text, "TSR_WINDOW=4  (default;")) << r.text;
  EXPECT_EQ(r.text.find("HOME"), std::string::npos);
}

// The same values the runtime's Config refuses.
TEST(SettingsReport, RefusedValuesAreCountedAndNamed) {
  const runtime::EnvMap env = {{"TSR_WINDOW", "0"}, {"TSR_BIND", "socket"}, {"TSR_SPIN_US", "10"}};
  SettingsReport r = renderSettings(env);
  EXPECT_EQ(r.invalid, 2);
  EXPECT_TRUE(hasLine(r.text, "TSR_WINDOW=0  (INVALID")) << r.text;
  EXPECT_TRUE(hasLine(r.text, "TSR_BIND=socket  (INVALID")) << r.text;
  EXPECT_TRUE(hasLine(r.text, "TSR_SPIN_US=10  (environment")) << r.text;
  EXPECT_FALSE(runtime::Config::fromEnvironment({{"TSR_WINDOW", "0"}}).isOk());
}

TEST(SettingsReport, TheJobSecretIsNeverPrinted) {
  SettingsReport r = renderSettings({{"TSR_JOB_SECRET", "0123456789abcdef-secret"}});
  EXPECT_EQ(r.text.find("0123456789abcdef-secret"), std::string::npos) << r.text;
  EXPECT_TRUE(hasLine(r.text, "TSR_JOB_SECRET=<set, not shown>  (environment")) << r.text;
}

TEST(SettingsReport, UnknownVariablesGetTheClosestName) {
  SettingsReport r = renderSettings({{"TSR_CHUNK_BYTE", "1"}, {"TSR_WINDOW", "2"}});
  EXPECT_TRUE(hasLine(r.text, "  TSR_CHUNK_BYTE (did you mean TSR_CHUNK_BYTES?)")) << r.text;
  EXPECT_FALSE(hasLine(r.text, "  TSR_WINDOW")) << r.text;
}

// TSR_COMPRESS_<KEY> is read for every key the compressor accepts (compress/registry.cc).
TEST(SettingsTable, EveryCompressorKeyIsASetting) {
  std::vector<std::string> fromKeys, fromTable;
  for (std::string key : compress::compressorKeys()) {
    for (char& c : key) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    fromKeys.push_back("TSR_COMPRESS_" + key);
  }
  for (const runtime::ConfigEntry& e : runtime::configTable())
    if (std::string(e.name).rfind("TSR_COMPRESS_", 0) == 0) fromTable.push_back(e.name);
  std::sort(fromKeys.begin(), fromKeys.end());
  std::sort(fromTable.begin(), fromTable.end());
  EXPECT_EQ(fromKeys, fromTable);
}

// The bootstrap and tsrun keep TSR_BASE_PORT's default as a constant each; the table must say
// the same, or tsr-info would print a default nothing uses.
TEST(SettingsTable, BasePortDefaultIsTheOneInUse) {
  runtime::Config defaults;
  EXPECT_EQ(defaults.get("TSR_BASE_PORT"), std::to_string(runtime::kDefaultBasePort));
  EXPECT_EQ(defaults.get("TSR_BASE_PORT"), std::to_string(tsrun::kDefaultBasePort));
}

}  // namespace
}  // namespace tsr::tools::info
