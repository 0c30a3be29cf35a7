// tsr-cluster-summary [FILE]: the summary of a tools/bench/cluster.sh run (cluster_summary.h),
// read from FILE or stdin.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "tools/bench/cluster_summary.h"

int main(int argc, char** argv) {
  using namespace tsr::tools::bench;
  if (argc > 2) {
    std::fprintf(stderr, "usage: %s [FILE]\n", argv[0]);
    return 2;
  }
  ClusterRun run;
  if (argc == 2) {
    std::ifstream in(argv[1]);
    if (!in) {
      std::fprintf(stderr, "tsr-cluster-summary: cannot read %s\n", argv[1]);
      return 2;
    }
    run = parseClusterRun(in);
  } else {
    run = parseClusterRun(std::cin);
  }
  std::cout << formatClusterSummary(run);
  return 0;
}
