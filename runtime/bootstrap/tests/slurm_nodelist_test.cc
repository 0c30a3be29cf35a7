#include "runtime/bootstrap/slurm_nodelist.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

namespace tsr::runtime {
namespace {

using Hosts = std::vector<std::string>;

Hosts expand(const std::string& s) {
  auto r = expandNodelist(s);
  EXPECT_TRUE(r.isOk()) << s << ": " << r.status().toString();
  return r.isOk() ? r.value() : Hosts{};
}

TEST(SlurmNodelist, PlainNames) {
  EXPECT_EQ(expand("gpu5"), (Hosts{"gpu5"}));
  EXPECT_EQ(expand("a,b,c"), (Hosts{"a", "b", "c"}));
}

TEST(SlurmNodelist, RangesKeepZeroPadding) {
  EXPECT_EQ(expand("node[01-03,7],gpu5"), (Hosts{"node01", "node02", "node03", "node7", "gpu5"}));
  EXPECT_EQ(expand("n[8-11]"), (Hosts{"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(expand("n[098-101]"), (Hosts{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(expand("n[0]"), (Hosts{"n0"}));
}

TEST(SlurmNodelist, SuffixAndSeveralGroups) {
  EXPECT_EQ(expand("r[1-2]n[1-2]"), (Hosts{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(expand("node[1-2].ib"), (Hosts{"node1.ib", "node2.ib"}));
  EXPECT_EQ(expand("a[1,3],b[2-3]"), (Hosts{"a1", "a3", "b2", "b3"}));
}

TEST(SlurmNodelist, Errors) {
  for (const char* bad : {"", "node[1-3", "node1-3]", "node[3-1]", "node[a-b]", "node[]", "a,,b", "node[1-2,]",
                          "n[[1]]", "node[1-99999999]", "a b"}) {
    auto r = expandNodelist(bad);
    EXPECT_FALSE(r.isOk()) << "'" << bad << "' should fail";
    if (!r.isOk()) {
      EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
      EXPECT_NE(r.status().message().find(std::string("'") + bad + "'"), std::string::npos) << r.status().message();
    }
  }
}

long peakRssKb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// A few hundred bytes can name billions of hosts (one took a rank down with bad_alloc): every
// such list is refused, within the limit of 2^20 hosts and 64 MiB of names, before it is built.
TEST(SlurmNodelist, HugeListsAreRefusedBeforeTheyAreBuilt) {
  std::string manyRanges = "n[";
  while (manyRanges.size() < 630) manyRanges += "0-999999,";
  manyRanges += "0-999999]";  // 641 bytes, 71 million hosts
  ASSERT_EQ(manyRanges.size(), 641u);
  for (const std::string& list :
       {manyRanges, std::string("a[0-999999]b[0-999999]"), std::string("a[0-999999],b[0-999999]"),
        std::string(600, 'x') + "[0-999999]", std::string("r[0-99999]") + std::string(700, 'y')}) {
    long before = peakRssKb();
    auto r = expandNodelist(list);
    long grownMb = (peakRssKb() - before) / 1024;
    ASSERT_FALSE(r.isOk()) << list.substr(0, 40) << "... expanded to " << r.value().size() << " hosts";
    EXPECT_NE(r.status().message().find("names more than 1048576 hosts or 67108864 bytes of host names"),
              std::string::npos)
        << r.status().message().substr(0, 200);
    EXPECT_LT(grownMb, 200) << list.substr(0, 40) << "...";
  }
  EXPECT_EQ(expand("n[0-1048575]").size(), 1048576u);  // the limit itself is fine
}

TEST(SlurmTasksPerNode, Expands) {
  auto r = expandTasksPerNode("2(x3),1");
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r.value(), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(expandTasksPerNode("4").value(), (std::vector<int>{4}));
  EXPECT_EQ(expandTasksPerNode("1,3(x2)").value(), (std::vector<int>{1, 3, 3}));
}

TEST(SlurmTasksPerNode, Errors) {
  for (const char* bad : {"", "x", "2(x)", "2(3)", "2(x3", "0", "2(x0)", "1,,2", "-1"}) {
    auto r = expandTasksPerNode(bad);
    EXPECT_FALSE(r.isOk()) << "'" << bad << "' should fail";
    if (!r.isOk()) {
      EXPECT_NE(r.status().message().find(std::string("'") + bad + "'"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace tsr::runtime
