// Summary of a tools/bench/cluster.sh run: the median bus bandwidth of every Tessera run and
// peer over the repeats, and Tessera's ratio to each peer taken repeat by repeat (the runs of
// one repeat are interleaved, so their ratio is what the machine's drift leaves alone). Pure:
// text in, text out; tsr-cluster-summary is the I/O around it.
#pragma once

#include <istream>
#include <map>
#include <string>
#include <vector>

namespace tsr::tools::bench {

// One kind of run (a tsr-bench setting, "Open MPI" or "gloo"): per repeat, busbw by size.
struct SeriesRuns {
  std::string label;
  bool peer = false;
  std::vector<std::map<long long, double>> repeats;
};

struct ClusterRun {
  std::vector<SeriesRuns> series;  // in the order they first appear
};

// Reads cluster.sh's output: "## ..." section headers, then rows in the peer format (rank 0's
// prefixed "[0]"); other ranks' lines, comments and failed rows are skipped.
ClusterRun parseClusterRun(std::istream& in);

// Per Tessera series and size: median busbw, then per peer the median of the per-repeat
// ratios with their range. Empty when there is nothing to summarize.
std::string formatClusterSummary(const ClusterRun& run);

}  // namespace tsr::tools::bench
