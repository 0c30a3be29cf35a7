#include "topology/hostfile.h"

#include <gtest/gtest.h>

#include <chrono>

namespace tsr::topology {
namespace {

std::vector<HostEntry> parseOk(const std::string& text) {
  auto result = parseHostfile(text, "hosts.txt");
  EXPECT_TRUE(result.isOk()) << result.status().toString();
  return result.isOk() ? result.value() : std::vector<HostEntry>{};
}

std::string parseError(const std::string& text, const std::string& file = "hosts.txt") {
  auto result = parseHostfile(text, file);
  EXPECT_FALSE(result.isOk()) << "accepted: " << text;
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  return result.status().message();
}

TEST(Hostfile, EveryForm) {
  auto hosts = parseOk(
      "# cluster\n"
      "\n"
      "node1 slots=4\n"
      "node2:2\n"
      "   node3   \n"
      "node4 slots=3   # trailing comment\n"
      "\tnode-5.example.com\tslots=1\r\n");
  std::vector<HostEntry> expected = {
      {"node1", 4, 3}, {"node2", 2, 4}, {"node3", 1, 5}, {"node4", 3, 6}, {"node-5.example.com", 1, 7}};
  EXPECT_EQ(hosts, expected);
  EXPECT_EQ(totalSlots(hosts), 11);
}

TEST(Hostfile, NoTrailingNewlineAndIpAddresses) {
  auto hosts = parseOk("127.0.0.1 slots=2\n10.0.0.7:3");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0], (HostEntry{"127.0.0.1", 2, 1}));
  EXPECT_EQ(hosts[1], (HostEntry{"10.0.0.7", 3, 2}));
}

// IPv6's loopback (the one IPv6 address taken: this machine), bare or in brackets with a count.
TEST(Hostfile, Ipv6LoopbackOnly) {
  auto hosts = parseOk("::1 slots=2\n[::1]:3\n");
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0], (HostEntry{"::1", 5, 1}));
  EXPECT_NE(parseError("fe80::1 slots=2\n").find("the loopback only"), std::string::npos);
  EXPECT_NE(parseError("[::1 slots=2\n").find("bad host '[::1'"), std::string::npos);
  EXPECT_NE(parseError("[::1]:2 slots=2\n").find("slot count given twice"), std::string::npos);
}

TEST(Hostfile, RepeatedHostAddsSlotsAtFirstPosition) {
  auto hosts = parseOk("a slots=2\nb\na:3\n");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0], (HostEntry{"a", 5, 1}));
  EXPECT_EQ(hosts[1], (HostEntry{"b", 1, 2}));
}

void expectMentions(const std::string& message, const std::vector<std::string>& parts) {
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' missing in: " << message;
  }
}

TEST(Hostfile, BadSlotCountNamesFileLineAndText) {
  expectMentions(parseError("good slots=2\nnode1 slots=0\n"),
                 {"hosts.txt:2", "bad slot count", "'0'", "node1 slots=0"});
  expectMentions(parseError("node1 slots=x\n"), {"hosts.txt:1", "'x'"});
  expectMentions(parseError("# c\nnode1 slots=-2\n"), {"hosts.txt:2", "'-2'"});
  expectMentions(parseError("node1 slots=\n"), {"hosts.txt:1", "bad slot count"});
  expectMentions(parseError("node1 slots=3x\n"), {"hosts.txt:1", "'3x'"});
  expectMentions(parseError("node1:0\n"), {"hosts.txt:1", "'0'", "node1:0"});
  expectMentions(parseError("a\nb\nnode1:many\n"), {"hosts.txt:3", "'many'"});
  expectMentions(parseError("node1 slots=99999999999\n"), {"hosts.txt:1", "99999999999"});
}

TEST(Hostfile, UnknownKeywordNamesFileLineAndText) {
  expectMentions(parseError("node1 slots=2\n\nnode2 cpus=2\n", "/etc/tsr/hosts"),
                 {"/etc/tsr/hosts:3", "unknown keyword", "'cpus=2'"});
  expectMentions(parseError("node1 max_slots=4\n"), {"hosts.txt:1", "'max_slots=4'"});
  expectMentions(parseError("node1 fast\n"), {"hosts.txt:1", "'fast'"});
}

TEST(Hostfile, SlotCountGivenTwice) {
  expectMentions(parseError("node1:2 slots=2\n"), {"hosts.txt:1", "twice"});
  expectMentions(parseError("node1 slots=2 slots=3\n"), {"hosts.txt:1", "twice"});
}

TEST(Hostfile, BadHostName) {
  expectMentions(parseError("no/de slots=2\n"), {"hosts.txt:1", "bad host name", "'no/de'"});
  expectMentions(parseError(":4\n"), {"hosts.txt:1", "bad host name"});
}

// The host becomes a word of the rsh agent's command line: a word ssh reads as an option
// (-F<file> gives it a config file whose ProxyCommand runs here, -J a jump host) is no host.
TEST(Hostfile, HostNamesThatLookLikeOptionsAreRefused) {
  expectMentions(parseError("node1\n-Fevil_config slots=1\n"),
                 {"hosts.txt:2", "bad host name '-Fevil_config'", "starting with a letter or digit"});
  expectMentions(parseError("-Jjumphost\n"), {"hosts.txt:1", "bad host name '-Jjumphost'"});
  expectMentions(parseError("-Fx:2\n"), {"hosts.txt:1", "'-Fx'"});
  expectMentions(parseError("--\n"), {"hosts.txt:1", "'--'"});
  expectMentions(parseError(".hidden\n"), {"hosts.txt:1", "'.hidden'"});
  auto list = parseHostList("node1:2,-Fx:1");
  ASSERT_FALSE(list.isOk());
  expectMentions(list.status().message(), {"item 2", "bad host name '-Fx'"});
  EXPECT_TRUE(parseHostList("node-1:2,10.0.0.1,a_b.example.com").isOk());
}

// A hostfile of 1 MiB holds some 100000 hosts: merging repeated names must not compare every
// pair (that took about a minute).
TEST(Hostfile, ManyHostsAreParsedInLinearTime) {
  std::string text;
  for (int pass = 0; pass < 2; ++pass)
    for (int i = 0; i < 100000; ++i) text += "node" + std::to_string(i) + " slots=2\n";
  auto start = std::chrono::steady_clock::now();
  auto hosts = parseHostfile(text, "big");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(hosts.isOk()) << hosts.status().toString();
  ASSERT_EQ(hosts.value().size(), 100000u);
  EXPECT_EQ(hosts.value()[99999], (HostEntry{"node99999", 4, 100000}));
  EXPECT_LT(seconds, 10.0);
}

TEST(Hostfile, EmptyFileIsAnError) {
  expectMentions(parseError("", "empty.txt"), {"empty.txt", "no hosts", "empty"});
  expectMentions(parseError("# only\n\n   \n# comments\n", "c.txt"), {"c.txt", "no hosts", "4 lines"});
}

TEST(HostList, Forms) {
  auto result = parseHostList("host1:4,host2,host3:2");
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  std::vector<HostEntry> expected = {{"host1", 4, 1}, {"host2", 1, 2}, {"host3", 2, 3}};
  EXPECT_EQ(result.value(), expected);
}

TEST(HostList, Errors) {
  auto bad = parseHostList("host1:4,,host2");
  ASSERT_FALSE(bad.isOk());
  expectMentions(bad.status().message(), {"item 2", "empty host"});
  bad = parseHostList("host1:0");
  ASSERT_FALSE(bad.isOk());
  expectMentions(bad.status().message(), {"-H", "item 1", "'0'"});
  EXPECT_FALSE(parseHostList("").isOk());
  EXPECT_FALSE(parseHostList("a,").isOk());
}

TEST(Hostfile, MapRanksBySlot) {
  std::vector<HostEntry> hosts = {{"a", 2, 1}, {"b", 3, 2}};
  EXPECT_EQ(mapRanksBySlot(hosts, 0, "the hostfile").value(), (std::vector<int>{0, 0, 1, 1, 1}));
  EXPECT_EQ(mapRanksBySlot(hosts, 3, "the hostfile").value(), (std::vector<int>{0, 0, 1}));
  auto tooMany = mapRanksBySlot(hosts, 6, "the hostfile");
  ASSERT_FALSE(tooMany.isOk());
  EXPECT_EQ(tooMany.status().message(), "-np 6 exceeds the 5 slots of the hostfile");
  // Hosts from -H are not a hostfile: the message says where they came from.
  EXPECT_EQ(mapRanksBySlot(hosts, 9, "the host list").status().message(), "-np 9 exceeds the 5 slots of the host list");
}

}  // namespace
}  // namespace tsr::topology
