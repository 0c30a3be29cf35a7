#include "runtime/bootstrap/slurm_nodelist.h"

#include <gtest/gtest.h>

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
  for (const char* bad : {"", "node[1-3", "node1-3]", "node[3-1]", "node[a-b]", "node[]",
                          "a,,b", "node[1-2,]", "n[[1]]", "node[1-99999999]", "a b"}) {
    auto r = expandNodelist(bad);
    EXPECT_FALSE(r.isOk()) << "'" << bad << "' should fail";
    if (!r.isOk()) {
      EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
      EXPECT_NE(r.status().message().find(std::string("'") + bad + "'"), std::string::npos)
          << r.status().message();
    }
  }
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
