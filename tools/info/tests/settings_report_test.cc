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

// The compressor variables are checked together, as the compressor built from them would check
// them: a k topk cannot take, a scale block that is no multiple of 64, a momentum factor out of
// [0, 1), a seed that is no unsigned integer; each refusal names its variable.
TEST(SettingsReport, CompressorValuesAreCheckedAsTheCompressorWould) {
  SettingsReport ok = renderSettings({{"TSR_COMPRESS_COMPRESSOR", "topk"}, {"TSR_COMPRESS_K", "0.01"}});
  EXPECT_EQ(ok.invalid, 0) << ok.text;
  EXPECT_EQ(renderSettings({{"TSR_COMPRESS_K", "8"}, {"TSR_COMPRESS_SEED", "7"}}).invalid, 0);
  EXPECT_EQ(renderSettings({{"TSR_COMPRESS_SCALE_BLOCK", "4096"}}).invalid, 0);

  struct Case {
    runtime::EnvMap env;
    std::string line;  // the entry marked INVALID
    std::string said;
  };
  const Case cases[] = {
      {{{"TSR_COMPRESS_COMPRESSOR", "topk"}, {"TSR_COMPRESS_K", "1.5"}}, "TSR_COMPRESS_K=1.5  (INVALID", "'k'"},
      {{{"TSR_COMPRESS_K", "-3"}}, "TSR_COMPRESS_K=-3  (INVALID", "'k'"},
      {{{"TSR_COMPRESS_SCALE_BLOCK", "100"}}, "TSR_COMPRESS_SCALE_BLOCK=100  (INVALID", "multiple of 64"},
      {{{"TSR_COMPRESS_MOMENTUM_MU", "1.5"}}, "TSR_COMPRESS_MOMENTUM_MU=1.5  (INVALID", "[0, 1)"},
      {{{"TSR_COMPRESS_SEED", "-1"}}, "TSR_COMPRESS_SEED=-1  (INVALID", "unsigned 64-bit"},
      {{{"TSR_COMPRESS_COMPRESSOR", "topk"}, {"TSR_COMPRESS_SCALING", "true"}},
       "TSR_COMPRESS_SCALING=true  (INVALID",
       "does not apply to compressor 'topk'"},
  };
  for (const Case& c : cases) {
    SettingsReport r = renderSettings(c.env);
    EXPECT_EQ(r.invalid, 1) << c.line << "\n" << r.text;
    EXPECT_TRUE(hasLine(r.text, c.line)) << c.line << "\n" << r.text;
    EXPECT_NE(r.text.find(c.said), std::string::npos) << c.said << "\n" << r.text;
  }
  // A value the table refuses is counted once, not again for the set.
  SettingsReport bad = renderSettings({{"TSR_COMPRESS_COMPRESSOR", "zip"}});
  EXPECT_EQ(bad.invalid, 1) << bad.text;
}

}  // namespace
}  // namespace tsr::tools::info
