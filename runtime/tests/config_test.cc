// Config: defaults, then TSR_* variables, then per-call settings; unknown names warned about
// with the closest known one; bad values rejected naming the variable and the value.
#include <gtest/gtest.h>

#include "runtime/config.h"

namespace tsr::runtime {
namespace {

TEST(Config, DefaultsThenEnvironmentThenCalls) {
  Config defaults;
  EXPECT_EQ(defaults.timeoutMs(), 300000);
  EXPECT_EQ(defaults.get("TSR_BIND"), "numa");
  auto env = Config::fromEnvironment({{"TSR_TIMEOUT_MS", "5000"}, {"HOME", "/root"}});
  ASSERT_TRUE(env.isOk()) << env.status().toString();
  Config config = env.take();
  EXPECT_EQ(config.timeoutMs(), 5000);
  EXPECT_TRUE(config.warnings().empty());
  ASSERT_TRUE(config.set("timeout_ms", "7000").isOk());  // any case, prefix optional
  EXPECT_EQ(config.timeoutMs(), 7000);
  ASSERT_TRUE(config.set("TSR_log_level", "debug").isOk());
  EXPECT_EQ(config.get("log_level"), "debug");
}

TEST(Config, UnknownVariableIsAWarningWithTheClosestName) {
  auto config = Config::fromEnvironment({{"TSR_TIMEOUT_SM", "5"}, {"TSR_ZZZZZZZZZZZZ", "1"}});
  ASSERT_TRUE(config.isOk());
  ASSERT_EQ(config.value().warnings().size(), 2u);
  std::string all = config.value().warnings()[0] + "\n" + config.value().warnings()[1];
  EXPECT_NE(all.find("TSR_TIMEOUT_SM"), std::string::npos) << all;
  EXPECT_NE(all.find("did you mean TSR_TIMEOUT_MS?"), std::string::npos) << all;
  EXPECT_NE(all.find("TSR_ZZZZZZZZZZZZ is ignored"), std::string::npos) << all;
  EXPECT_EQ(config.value().timeoutMs(), 300000);
}

TEST(Config, BadValuesNameTheVariableAndTheValue) {
  auto notInt = Config::fromEnvironment({{"TSR_TIMEOUT_MS", "soon"}});
  ASSERT_FALSE(notInt.isOk());
  EXPECT_EQ(notInt.status().code(), Code::kInvalidArgument);
  EXPECT_NE(notInt.status().message().find("TSR_TIMEOUT_MS=soon"), std::string::npos);
  auto outOfRange = Config::fromEnvironment({{"TSR_WINDOW", "0"}});
  ASSERT_FALSE(outOfRange.isOk());
  EXPECT_NE(outOfRange.status().message().find("1..64"), std::string::npos) << outOfRange.status().message();
  Config config;
  Status badEnum = config.set("TSR_BIND", "socket");
  EXPECT_EQ(badEnum.code(), Code::kInvalidArgument);
  EXPECT_NE(badEnum.message().find("none|numa|core"), std::string::npos) << badEnum.message();
  Status unknown = config.set("TSR_TIMEOUTMS", "5");
  EXPECT_NE(unknown.message().find("did you mean TSR_TIMEOUT_MS?"), std::string::npos) << unknown.message();
  EXPECT_EQ(config.get("TSR_BIND"), "numa");  // a failed set leaves the value alone
}

TEST(Config, EveryDefaultIsValid) {
  for (const auto& e : configTable()) {
    Config c;
    EXPECT_TRUE(c.set(e.name, e.defaultValue).isOk()) << e.name << "=" << e.defaultValue;
  }
}

}  // namespace
}  // namespace tsr::runtime
