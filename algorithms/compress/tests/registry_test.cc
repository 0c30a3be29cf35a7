#include "algorithms/compress/registry.h"

#include <gtest/gtest.h>

namespace tsr::compress {
namespace {

struct BadCase {
  Params params;
  std::vector<std::string> mustMention;
};

TEST(Registry, EveryBadParameterGivesANamedError) {
  const std::vector<BadCase> cases = {
      {{}, {"'compressor'", "required", "onebit, topk"}},
      {{{"compressor", "zip"}}, {"'compressor'", "'zip'", "onebit, topk, randomk, dithering, fp16, bf16, none"}},
      {{{"compressor", "topk"}}, {"'k'", "required", "'topk'", "ratio"}},
      {{{"compressor", "randomk"}}, {"'k'", "required", "'randomk'"}},
      {{{"compressor", "dithering"}}, {"'k'", "required", "levels"}},
      {{{"compressor", "topk"}, {"k", "0"}}, {"'k'", "'0'", "positive count"}},
      {{{"compressor", "topk"}, {"k", "-3"}}, {"'k'", "'-3'"}},
      {{{"compressor", "topk"}, {"k", "abc"}}, {"'k'", "'abc'"}},
      {{{"compressor", "topk"}, {"k", "1.5"}}, {"'k'", "'1.5'", "ratio in (0, 1)"}},
      {{{"compressor", "randomk"}, {"k", "0.0"}}, {"'k'", "'0.0'"}},
      {{{"compressor", "dithering"}, {"k", "0"}}, {"'k'", "'0'", "1..32767"}},
      {{{"compressor", "dithering"}, {"k", "16"}, {"dithering_partition", "natural"}}, {"'k'", "'16'", "1..15"}},
      {{{"compressor", "dithering"}, {"k", "4"}, {"dithering_partition", "log"}},
       {"'dithering_partition'", "'log'", "linear, natural"}},
      {{{"compressor", "dithering"}, {"k", "4"}, {"dithering_normalize", "l1"}},
       {"'dithering_normalize'", "'l1'", "max, l2"}},
      {{{"compressor", "onebit"}, {"scaling", "yes"}}, {"'scaling'", "'yes'", "true, false"}},
      {{{"compressor", "onebit"}, {"scale_block", "100"}}, {"'scale_block'", "'100'", "a multiple of 64"}},
      {{{"compressor", "onebit"}, {"scale_block", "-64"}}, {"'scale_block'", "'-64'"}},
      {{{"compressor", "topk"}, {"k", "5"}, {"scale_block", "64"}}, {"'scale_block'", "does not apply", "'topk'"}},
      {{{"compressor", "onebit"}, {"ef", "fancy"}}, {"'ef'", "'fancy'", "vanilla, none"}},
      {{{"compressor", "onebit"}, {"momentum", "adam"}}, {"'momentum'", "'adam'", "nesterov, none"}},
      {{{"compressor", "onebit"}, {"momentum", "nesterov"}, {"momentum_mu", "1.5"}},
       {"'momentum_mu'", "'1.5'", "[0, 1)"}},
      {{{"compressor", "onebit"}, {"momentum", "nesterov"}, {"momentum_mu", "x"}}, {"'momentum_mu'", "'x'"}},
      {{{"compressor", "onebit"}, {"momentum_mu", "0.5"}}, {"'momentum_mu'", "momentum=nesterov"}},
      {{{"compressor", "onebit"}, {"seed", "-1"}}, {"'seed'", "'-1'", "unsigned"}},
      {{{"compressor", "onebit"}, {"k", "3"}}, {"'k'", "does not apply", "'onebit'"}},
      {{{"compressor", "topk"}, {"k", "3"}, {"scaling", "true"}}, {"'scaling'", "does not apply", "'topk'"}},
      {{{"compressor", "onebit"}, {"kk", "3"}}, {"unknown", "'kk'", "'3'", "accepted keys", "momentum_mu"}},
  };
  for (const BadCase& c : cases) {
    auto r = createCompressor(c.params, 1000);
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    for (const std::string& s : c.mustMention)
      EXPECT_NE(r.status().message().find(s), std::string::npos)
          << "message '" << r.status().message() << "' lacks '" << s << "'";
  }
}

TEST(Registry, GoodParametersBuildTheNamedCompressor) {
  struct Good {
    Params params;
    std::string name;
  };
  const std::vector<Good> cases = {
      {{{"compressor", "onebit"}}, "onebit(scaling=false)"},
      {{{"compressor", "onebit"}, {"scaling", "true"}, {"seed", "5"}}, "onebit(scaling=true)"},
      {{{"compressor", "onebit"}, {"scaling", "true"}, {"scale_block", "4096"}},
       "onebit(scaling=true, scale_block=4096)"},
      {{{"compressor", "onebit"}, {"scale_block", "64"}}, "onebit(scaling=false)"},  // no scale to block
      {{{"compressor", "topk"}, {"k", "0.01"}}, "topk(k=10)"},
      {{{"compressor", "topk"}, {"k", "5000"}}, "topk(k=1000)"},  // clamped to the tensor
      {{{"compressor", "randomk"}, {"k", "7"}, {"seed", "3"}}, "randomk(k=7, seed=3)"},
      {{{"compressor", "dithering"}, {"k", "8"}}, "dithering(k=8, partition=linear, normalize=max)"},
      {{{"compressor", "fp16"}, {"ef", "none"}, {"momentum", "none"}}, "fp16"},
      {{{"compressor", "bf16"}}, "bf16"},
      {{{"compressor", "none"}, {"ef", "vanilla"}}, "ef(none)"},
  };
  for (const Good& g : cases) {
    auto r = createCompressor(g.params, 1000);
    ASSERT_TRUE(r.isOk()) << r.status().toString();
    EXPECT_EQ(r.value()->name(), g.name);
    EXPECT_EQ(r.value()->count(), 1000u);
  }
  EXPECT_EQ(compressorKeys().size(), 10u);
}

// TSR_COMPRESS_* fill in what the parameters leave out; explicit parameters win; a variable
// that names no key is an error naming it.
TEST(Registry, EnvironmentDefaults) {
  std::map<std::string, std::string> env = {
      {"TSR_COMPRESS_COMPRESSOR", "topk"}, {"TSR_COMPRESS_K", "0.05"}, {"TSR_TIMEOUT_MS", "10"}};
  auto filled = withEnvironmentDefaults({{"k", "3"}}, env);
  ASSERT_TRUE(filled.isOk()) << filled.status().toString();
  EXPECT_EQ(filled.value().at("compressor"), "topk");
  EXPECT_EQ(filled.value().at("k"), "3");
  EXPECT_EQ(filled.value().count("timeout_ms"), 0u);
  auto made = createCompressor(filled.value(), 100);
  ASSERT_TRUE(made.isOk());
  EXPECT_EQ(made.value()->name(), "topk(k=3)");
  auto bad = withEnvironmentDefaults({}, {{"TSR_COMPRESS_KAY", "5"}});
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("TSR_COMPRESS_KAY=5"), std::string::npos) << bad.status().message();
  // A bad value from the environment is named with its variable; one given directly is not.
  const Params given = {{"compressor", "randomk"}, {"k", "4"}};
  auto seeded = withEnvironmentDefaults(given, {{"TSR_COMPRESS_SEED", "-1"}});
  ASSERT_TRUE(seeded.isOk());
  Status st = nameEnvironmentSource(createCompressor(seeded.value(), 100).status(), given, seeded.value());
  EXPECT_NE(st.message().find("'seed' has bad value '-1'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("(from TSR_COMPRESS_SEED=-1)"), std::string::npos) << st.message();
  Params direct = given;
  direct["seed"] = "-1";
  Status own = nameEnvironmentSource(createCompressor(direct, 100).status(), direct, direct);
  EXPECT_EQ(own.message().find("TSR_COMPRESS_"), std::string::npos) << own.message();
}

}  // namespace
}  // namespace tsr::compress
