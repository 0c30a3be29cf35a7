#include "topology/hostfile.h"

#include <gtest/gtest.h>

namespace tsr::topology {
namespace {

TEST(Hostfile, AllForms) {
  auto hosts = parseHostfile(
      "# cluster\n"
      "node01 slots=8\n"
      "\n"
      "node02:4   # trailing comment\n"
      "  node03  \n"
      "node-4.example.com slots=2\r\n"
      "node01 slots=2\n",
      "hosts.txt");
  ASSERT_TRUE(hosts.isOk()) << hosts.status().toString();
  std::vector<HostSlots> want = {{"node01", 10}, {"node02", 4}, {"node03", 1}, {"node-4.example.com", 2}};
  EXPECT_EQ(hosts.value(), want);
}

TEST(Hostfile, ErrorsNameFileAndLine) {
  auto check = [](const char* text, const char* want) {
    auto result = parseHostfile(text, "hf");
    ASSERT_FALSE(result.isOk()) << text;
    EXPECT_NE(result.status().message().find(want), std::string::npos) << result.status().message();
  };
  check("a\nb slots=x\n", "hf:2: bad slots value 'x'");
  check("a slots=0\n", "hf:1: bad slots value '0'");
  check("\n\nb:-3\n", "hf:3: bad slot count '-3'");
  check("a max_slots=4\n", "hf:1: unknown field 'max_slots=4'");
  check("a slots\n", "hf:1: unknown field 'slots'");
  check("bad/host\n", "hf:1: bad host name 'bad/host'");
  check("# only comments\n\n", "hostfile hf lists no hosts");
}

TEST(Hostfile, MapRanksBySlot) {
  std::vector<HostSlots> hosts = {{"a", 2}, {"b", 3}};
  EXPECT_EQ(mapRanksBySlot(hosts, 0).value(), (std::vector<int>{0, 0, 1, 1, 1}));
  EXPECT_EQ(mapRanksBySlot(hosts, 3).value(), (std::vector<int>{0, 0, 1}));
  auto tooMany = mapRanksBySlot(hosts, 6);
  ASSERT_FALSE(tooMany.isOk());
  EXPECT_NE(tooMany.status().message().find("-np 6 exceeds the 5 slots"), std::string::npos);
}

}  // namespace
}  // namespace tsr::topology
