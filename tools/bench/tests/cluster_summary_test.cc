// The cluster.sh summary: sections and rows parsed as cluster.sh prints them, medians over the
// repeats, and ratios taken repeat by repeat.
#include <gtest/gtest.h>

#include <sstream>

#include "tools/bench/cluster_summary.h"

namespace tsr::tools::bench {
namespace {

// Two repeats of two Tessera settings and gloo, with the noise cluster.sh's output carries.
const char* kRun = R"(## Tessera tsr-bench --algo ring, 4 hosts x 1 ranks, 10gbit, TSR_WAIT=spin
[0] # tsr-bench allreduce f32 sum, world=4, rate=10 Gbit/s
[0] #     size(B)      count iters    time(us)     min(us)     max(us) algbw(GB/s) busbw(GB/s)   floor(us) x_floor ok
[0]      16777216    4194304    10       50128       40927       63841       0.335       0.400       20133    2.49 OK
[0]      67108864   16777216    10      183592      172290      224209       0.366       0.600       80531    2.28 OK
[1] [23:21:41.929] [tessera rank 1] [transport] [warning] something
## Tessera tsr-bench --algo ring, 4 hosts x 1 ranks, 10gbit
[0]      16777216    4194304    10       50128       40927       63841       0.335       0.500       20133    2.49 OK
[0]      67108864   16777216    10      183592      172290      224209       0.366       0.300       80531    2.28 FAIL
## PyTorch gloo, N=4, 10gbit
# torch 1.13.0a0 gloo allreduce float32 sum, world=4
     16777216    4194304    10       57224       48662       75463       0.293       0.500       20133    2.84 OK
     67108864   16777216     5      178610      137265      203054       0.376       0.500       80531    2.22 OK
## Tessera tsr-bench --algo ring, 4 hosts x 1 ranks, 10gbit, TSR_WAIT=spin
[0]      16777216    4194304    10       50128       40927       63841       0.335       0.600       20133    2.49 OK
## Tessera tsr-bench --algo ring, 4 hosts x 1 ranks, 10gbit
[0]      16777216    4194304    10       50128       40927       63841       0.335       0.700       20133    2.49 -
## PyTorch gloo, N=4, 10gbit
     16777216    4194304    10       57224       48662       75463       0.293       0.400       20133    2.84 OK
## Open MPI failed (1)
)";

TEST(ClusterSummary, ParsesEverySectionAndRepeat) {
  std::istringstream in(kRun);
  ClusterRun run = parseClusterRun(in);
  ASSERT_EQ(run.series.size(), 3u);
  EXPECT_EQ(run.series[0].label, "ring TSR_WAIT=spin");
  EXPECT_EQ(run.series[1].label, "ring");
  EXPECT_EQ(run.series[2].label, "gloo");
  EXPECT_FALSE(run.series[0].peer);
  EXPECT_TRUE(run.series[2].peer);
  ASSERT_EQ(run.series[0].repeats.size(), 2u);
  EXPECT_DOUBLE_EQ(run.series[0].repeats[0].at(16777216), 0.400);
  EXPECT_DOUBLE_EQ(run.series[0].repeats[0].at(67108864), 0.600);
  EXPECT_DOUBLE_EQ(run.series[0].repeats[1].at(16777216), 0.600);
  // A failed row is no figure.
  EXPECT_EQ(run.series[1].repeats[0].count(67108864), 0u);
  ASSERT_EQ(run.series[2].repeats.size(), 2u);
  EXPECT_DOUBLE_EQ(run.series[2].repeats[1].at(16777216), 0.400);
}

TEST(ClusterSummary, MediansAndRatiosRepeatByRepeat) {
  std::istringstream in(kRun);
  std::string text = formatClusterSummary(parseClusterRun(in));
  // spin at 16 MiB: 0.4 and 0.6 -> median 0.5; against gloo 0.5 and 0.4: 0.8x and 1.5x.
  EXPECT_NE(text.find("16 MiB    ring TSR_WAIT=spin            0.500 (2)  vs gloo 1.15x (0.80-1.50)"),
            std::string::npos)
      << text;
  // default at 16 MiB: 0.5 and 0.7 (an unchecked row, "-") against 0.5 and 0.4: 1.0x and 1.75x.
  EXPECT_NE(text.find("16 MiB    ring                          0.600 (2)  vs gloo 1.38x (1.00-1.75)"),
            std::string::npos)
      << text;
  // 64 MiB: only the first repeat has both.
  EXPECT_NE(text.find("64 MiB    ring TSR_WAIT=spin            0.600 (1)  vs gloo 1.20x (1.20-1.20)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("64 MiB    ring    "), std::string::npos) << "a failed row was summarized: " << text;
}

// PEER_SNDBUFS runs each peer with and without a setting: two series, each compared.
TEST(ClusterSummary, PeerSettingsAreSeparateSeries) {
  std::istringstream in(R"(## Tessera tsr-bench , 4 hosts x 1 ranks, 10gbit, UCX_TCP_SNDBUF=64k
[0]      16777216    4194304    10       50128       40927       63841       0.335       1.000       20133    2.49 OK
## Open MPI MPI_Allreduce (default algorithm), N=4, 10gbit
     16777216    4194304    10       57224       48662       75463       0.293       0.250       20133    2.84 OK
## Open MPI MPI_Allreduce (default algorithm), N=4, 10gbit, sndbuf=65536
     16777216    4194304    10       57224       48662       75463       0.293       0.400       20133    2.84 OK
## PyTorch gloo, N=4, 10gbit
     16777216    4194304    10       57224       48662       75463       0.293       0.500       20133    2.84 OK
## PyTorch gloo, N=4, 10gbit, sndbuf=65536
     16777216    4194304    10       57224       48662       75463       0.293       0.800       20133    2.84 OK
)");
  ClusterRun run = parseClusterRun(in);
  ASSERT_EQ(run.series.size(), 5u);
  EXPECT_EQ(run.series[0].label, "UCX_TCP_SNDBUF=64k");
  EXPECT_EQ(run.series[1].label, "Open MPI");
  EXPECT_EQ(run.series[2].label, "Open MPI sndbuf=65536");
  EXPECT_EQ(run.series[3].label, "gloo");
  EXPECT_EQ(run.series[4].label, "gloo sndbuf=65536");
  std::string text = formatClusterSummary(run);
  EXPECT_NE(text.find("vs gloo 2.00x"), std::string::npos) << text;
  EXPECT_NE(text.find("vs gloo sndbuf=65536 1.25x"), std::string::npos) << text;
  EXPECT_NE(text.find("vs Open MPI sndbuf=65536 2.50x"), std::string::npos) << text;
}

// Settings whose values have commas stay whole: two UCX_TLS lists are two series.
TEST(ClusterSummary, SettingsWithCommasStayWhole) {
  std::istringstream in(R"(## Tessera tsr-bench --algo torus, 2 hosts x 2 ranks, 1gbit, UCX_TLS=tcp,self
[0]      16777216    4194304    10       50128       40927       63841       0.335       0.100       20133    2.49 OK
## Tessera tsr-bench --algo torus, 2 hosts x 2 ranks, 1gbit, UCX_TLS=tcp,self,sm TSR_WAIT=spin
[0]      16777216    4194304    10       50128       40927       63841       0.335       0.200       20133    2.49 OK
)");
  ClusterRun run = parseClusterRun(in);
  ASSERT_EQ(run.series.size(), 2u);
  EXPECT_EQ(run.series[0].label, "torus UCX_TLS=tcp,self");
  EXPECT_EQ(run.series[1].label, "torus UCX_TLS=tcp,self,sm TSR_WAIT=spin");
}

TEST(ClusterSummary, NothingToSummarizeIsEmpty) {
  std::istringstream in("## Open MPI: not installed\nsome text\n");
  EXPECT_EQ(formatClusterSummary(parseClusterRun(in)), "");
}

}  // namespace
}  // namespace tsr::tools::bench
