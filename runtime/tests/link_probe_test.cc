// The probe's pure part: how every rank turns the all-gathered reports into one link model.
#include <gtest/gtest.h>

#include "runtime/link_probe.h"

namespace tsr::runtime {
namespace {

TEST(LinkProbe, EachClassTakesTheMedianOfTheRanksThatMeasuredIt) {
  // Rows {isNet, latency, bytes/s}: three host links, two net links (the host boundaries).
  std::vector<double> rows = {0, 2e-6, 3e9, 0, 4e-6, 1e9, 1, 60e-6, 1.1e8, 0, 3e-6, 2e9, 1, 40e-6, 1.2e8};
  algorithms::LinkModel links;
  mergeProbeReports(rows, {true, true}, links);
  EXPECT_DOUBLE_EQ(links.host.latencySec, 3e-6);
  EXPECT_DOUBLE_EQ(links.host.bytesPerSec, 2e9);
  EXPECT_DOUBLE_EQ(links.net.latencySec, 50e-6);  // even count: the mean of the middle two
  EXPECT_DOUBLE_EQ(links.net.bytesPerSec, 1.15e8);
}

TEST(LinkProbe, AClassNotAskedForOrNotMeasuredKeepsItsValue) {
  std::vector<double> rows = {0, 2e-6, 3e9, 0, 2e-6, -1};
  algorithms::LinkModel links, defaults;
  links.net = {1e-3, 5e6};  // configured: the probe must not touch it
  mergeProbeReports(rows, {true, false}, links);
  EXPECT_DOUBLE_EQ(links.host.latencySec, 2e-6);
  EXPECT_DOUBLE_EQ(links.host.bytesPerSec, 3e9);  // the -1 (not measured) is left out
  EXPECT_DOUBLE_EQ(links.net.latencySec, 1e-3);
  algorithms::LinkModel untouched = defaults;
  mergeProbeReports(rows, {false, true}, untouched);  // nobody measured the net
  EXPECT_DOUBLE_EQ(untouched.net.bytesPerSec, defaults.net.bytesPerSec);
  EXPECT_DOUBLE_EQ(untouched.host.bytesPerSec, defaults.host.bytesPerSec);
}

}  // namespace
}  // namespace tsr::runtime
