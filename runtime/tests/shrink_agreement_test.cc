// ShrinkAgreement on a simulated network (messages delivered in rounds, some ranks dead or cut
// off): the live ranks end with the same lost set, a silent rank is lost at the deadline, only
// a majority goes on, and the message text round-trips.
#include "runtime/shrink_agreement.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace tsr::runtime {
namespace {

// N ranks; `dead` send and receive nothing; `cut` pairs cannot reach each other. Each rank
// sends mine() to every rank it counts live at the start and whenever its set grows.
struct Network {
  std::vector<ShrinkAgreement> ranks;
  std::set<int> dead;
  std::set<std::pair<int, int>> cut;
  std::vector<std::pair<int, ShrinkMessage>> inbox[16];

  explicit Network(int n) {
    for (int r = 0; r < n; ++r) ranks.emplace_back(r, n, 7, static_cast<uint16_t>(1000 + r));
  }
  bool reaches(int a, int b) const { return !cut.count({a, b}) && !cut.count({b, a}) && !dead.count(b); }
  void send(int from) {
    for (int to = 0; to < static_cast<int>(ranks.size()); ++to)
      if (to != from && reaches(from, to) && !ranks[from].mine().lost[to])
        inbox[to].push_back({from, ranks[from].mine()});
  }
  void start() {
    for (int r = 0; r < static_cast<int>(ranks.size()); ++r)
      if (!dead.count(r)) send(r);
  }
  // Delivers one round; true when anything was delivered.
  bool round() {
    std::vector<std::pair<int, ShrinkMessage>> now[16];
    bool any = false;
    for (size_t r = 0; r < ranks.size(); ++r) now[r].swap(inbox[r]);
    for (size_t r = 0; r < ranks.size(); ++r)
      for (auto& [from, m] : now[r]) {
        any = true;
        if (ranks[r].receive(from, m)) send(static_cast<int>(r));
      }
    return any;
  }
  void settle() {
    for (int i = 0; i < 20 && round(); ++i) {
    }
  }
};

TEST(ShrinkAgreement, AllLiveRanksAgreeAtOnce) {
  Network net(4);
  net.start();
  net.settle();
  for (auto& a : net.ranks) {
    EXPECT_TRUE(a.agreed());
    EXPECT_EQ(a.survivors(), (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(a.ports(), (std::vector<uint16_t>{1000, 1001, 1002, 1003}));
    EXPECT_TRUE(a.majority().isOk());
  }
}

// Rank 2 died; only rank 0 saw it. Rank 0's message tells the others, who agree with it.
TEST(ShrinkAgreement, AFailureOneRankSawReachesEveryLiveRank) {
  Network net(4);
  net.dead = {2};
  EXPECT_TRUE(net.ranks[0].lose(2));
  EXPECT_FALSE(net.ranks[0].lose(2)) << "lost twice";
  net.start();
  net.settle();
  for (int r : {0, 1, 3}) {
    EXPECT_TRUE(net.ranks[r].agreed()) << "rank " << r;
    EXPECT_EQ(net.ranks[r].survivors(), (std::vector<int>{0, 1, 3})) << "rank " << r;
    EXPECT_EQ(net.ranks[r].ports(), (std::vector<uint16_t>{1000, 1001, 1003})) << "rank " << r;
    EXPECT_EQ(net.ranks[r].lostText(), "rank 2");
  }
}

// A rank that never answers (stopped, unseen by the transport) holds the others up until the
// deadline, then is lost; a stopped rank that wakes later is not taken back.
TEST(ShrinkAgreement, ASilentRankIsLostAtTheDeadlineAndStaysLost) {
  Network net(5);
  net.dead = {4};
  net.start();
  net.settle();
  for (int r = 0; r < 4; ++r) EXPECT_EQ(net.ranks[r].waitingFor(), (std::vector<int>{4})) << "rank " << r;
  for (int r = 0; r < 4; ++r)
    if (net.ranks[r].expire()) net.send(r);
  net.settle();
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(net.ranks[r].agreed()) << "rank " << r;
    EXPECT_EQ(net.ranks[r].survivors(), (std::vector<int>{0, 1, 2, 3}));
  }
  ShrinkMessage late{7, 1004, std::vector<bool>(5, false)};
  EXPECT_FALSE(net.ranks[0].receive(4, late));
  EXPECT_EQ(net.ranks[0].survivors(), (std::vector<int>{0, 1, 2, 3})) << "a lost rank came back";
}

// Rank 1 died; rank 3 answered the first round (it had not seen rank 1 fail) and then stopped
// (SIGSTOP, a cut link): its last set is stale, so it holds the others up until the deadline,
// where it is lost too and the other three, a majority of 5, agree without both.
TEST(ShrinkAgreement, ARankThatStoppedAfterAnsweringIsLostAtTheDeadline) {
  Network net(5);
  net.dead = {1};
  for (int r : {0, 2, 4}) net.ranks[r].lose(1);
  net.start();  // rank 3 speaks once, with no rank lost
  net.dead.insert(3);
  net.inbox[3].clear();  // it reads nothing more
  net.settle();
  for (int r : {0, 2, 4}) EXPECT_EQ(net.ranks[r].waitingFor(), (std::vector<int>{3})) << "rank " << r;
  for (int r : {0, 2, 4})
    if (net.ranks[r].expire()) net.send(r);
  net.settle();
  for (int r : {0, 2, 4}) {
    EXPECT_TRUE(net.ranks[r].agreed()) << "rank " << r;
    EXPECT_EQ(net.ranks[r].survivors(), (std::vector<int>{0, 2, 4})) << "rank " << r;
    EXPECT_TRUE(net.ranks[r].majority().isOk());
  }
}

// A 2|2 partition: each side loses the other, neither is a majority. 3|1: the three go on.
TEST(ShrinkAgreement, OnlyAMajorityGoesOn) {
  Network even(4);
  for (int a : {0, 1})
    for (int b : {2, 3}) even.cut.insert({a, b});
  for (int r = 0; r < 4; ++r)
    for (int o = 0; o < 4; ++o)
      if (!even.reaches(r, o) && o != r) even.ranks[r].lose(o);
  even.start();
  even.settle();
  for (auto& a : even.ranks) {
    EXPECT_TRUE(a.agreed());
    Status st = a.majority();
    EXPECT_EQ(st.code(), Code::kPeerFailed);
    EXPECT_NE(st.message().find("2 of 4, not a majority"), std::string::npos) << st.message();
  }
  Network odd(4);
  odd.cut = {{3, 0}, {3, 1}, {3, 2}};
  odd.ranks[3].lose(0), odd.ranks[3].lose(1), odd.ranks[3].lose(2);
  odd.ranks[0].lose(3);
  odd.start();
  odd.settle();
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(odd.ranks[r].majority().isOk()) << odd.ranks[r].majority().message();
  EXPECT_NE(odd.ranks[3].majority().message().find("rank 3 and the ranks it can reach (rank 3) are 1 of 4"),
            std::string::npos)
      << odd.ranks[3].majority().message();
}

// A peer that counts this rank lost is lost to it (they cannot share a communicator); a
// message of another shrink (epoch) is not this one's.
TEST(ShrinkAgreement, APeerThatLostUsIsLostAndOtherEpochsAreIgnored) {
  ShrinkAgreement a(0, 3, 2, 500);
  ShrinkMessage other{3, 501, {false, false, false}};
  EXPECT_FALSE(a.receive(1, other));
  EXPECT_EQ(a.waitingFor(), (std::vector<int>{1, 2}));
  ShrinkMessage lostUs{2, 502, {true, false, false}};
  EXPECT_TRUE(a.receive(2, lostUs));
  EXPECT_EQ(a.survivors(), (std::vector<int>{0, 1}));
}

TEST(ShrinkAgreement, MessagesRoundTripAndMalformedOnesAreRefused) {
  ShrinkMessage m{42, 31337, {false, true, false, false, true, true, false, false, false, true}};
  auto back = decodeShrink(encodeShrink(m), 10);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(back.value().epoch, 42u);
  EXPECT_EQ(back.value().port, 31337);
  EXPECT_EQ(back.value().lost, m.lost);
  for (const char* bad :
       {"shrink 1 2", "shrink -1 2 000", "grow 1 2 000", "shrink 1 70000 000", "shrink 1 2 0g0", "shrink 1 2 00"})
    EXPECT_FALSE(decodeShrink(bad, 10).isOk()) << bad;
}

}  // namespace
}  // namespace tsr::runtime
