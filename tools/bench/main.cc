// tsr-bench: nccl-tests style benchmark of Tessera's collectives; run it under tsrun.
//   tsrun -np 4 build/bin/tsr-bench -b 8 -e 64M -f 2 -n 20 -w 5 -d f32 -o sum -c 1
// --algo NAME of a tensor algorithm (marsit, marsit-torus, spardl, topk, onebit, ...; tsr-info
// lists them) benchmarks that tensor instead (f32; --density, spardl --teams/--sag).
// Rank 0 prints one row per size; --json FILE adds one JSON object per size. Exit status:
// 0, or 1 when a value is wrong, a collective failed or the average busbw is below
// --min-busbw; 2 for usage errors.
#include <cstdio>
#include <fstream>
#include <new>
#include <string>
#include <vector>

#include "runtime/communicator.h"
#include "runtime/config.h"
#include "tools/bench/bench_compressed.h"
#include "tools/bench/bench_marsit.h"
#include "tools/bench/bench_options.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/bench_runner.h"

using namespace tsr;
using namespace tsr::tools::bench;

namespace {

// Test hook (not in --help): "--plant-wrong R" makes rank R corrupt one result element.
int takePlantWrong(std::vector<const char*>& args) {
  for (size_t i = 1; i + 1 < args.size(); ++i)
    if (std::string(args[i]) == "--plant-wrong") {
      int rank = std::atoi(args[i + 1]);
      args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
      return rank;
    }
  return -1;
}

Result<std::unique_ptr<runtime::Communicator>> createCommunicator(const BenchOptions& o) {
  runtime::EnvMap env = runtime::processEnvironment();
  if (o.algo != "auto" && tensorFamilyOf(o).empty()) env["TSR_ALGO"] = o.algo;
  TSR_ASSIGN_OR_RETURN(runtime::Config config, runtime::Config::fromEnvironment(env));
  TSR_ASSIGN_OR_RETURN(runtime::LaunchInfo launch, runtime::launchInfoFromEnv(env));
  return runtime::Communicator::create(launch, config);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<const char*> args(argv, argv + argc);
  RunnerHooks hooks;
  hooks.plantWrongOnRank = takePlantWrong(args);
  auto parsed = parseBenchOptions(static_cast<int>(args.size()), args.data());
  if (!parsed.isOk()) {
    bool help = parsed.status().code() == Code::kNotSupported;
    std::fprintf(help ? stdout : stderr, "%s\n", parsed.status().message().c_str());
    return help ? 0 : 2;
  }
  const BenchOptions& o = parsed.value();
  auto created = createCommunicator(o);
  if (!created.isOk()) {
    std::fprintf(stderr, "tsr-bench: %s\n", created.status().toString().c_str());
    return 2;
  }
  runtime::Communicator& comm = *created.value();
  const int n = comm.size();
  const bool printer = comm.rank() == 0;
  size_t unit = dataTypeSize(o.dtype) *
                (o.collective == Collective::kAllgather || o.collective == Collective::kReduceScatter ? n : 1);
  auto sizes = sweepSizes(o, unit);  // the same on every rank: all of them stop
  if (!sizes.isOk()) {
    if (printer) std::fprintf(stderr, "tsr-bench: %s\n", sizes.status().message().c_str());
    return 2;
  }
  std::ofstream json;
  if (printer && !o.jsonFile.empty()) {
    json.open(o.jsonFile);
    if (!json) {
      std::fprintf(stderr, "tsr-bench: cannot write --json %s\n", o.jsonFile.c_str());
      return 2;
    }
  }
  std::string ring;
  for (int r : comm.ringOrder()) ring += (ring.empty() ? "" : " ") + std::to_string(r);
  if (printer) {
    std::fputs(header(o, n, "UCX transport, hosts " + comm.hostOf(0) + ".." + comm.hostOf(n - 1) + ", ring " + ring,
                      settingsLine(runtime::processEnvironment()) + congestionControlLine(tcpCongestionControl()) +
                          "# tcp send buffer (UCX, rank 0): " + comm.tcpSendBufferNote() + "\n")
                   .c_str(),
               stdout);
    std::fflush(stdout);  // seen at once through a pipe (tsrun, tee): the job is up and sweeping
  }
  std::vector<BenchRow> rows;
  bool failed = false;
  for (size_t bytes : sizes.value()) {
    Result<BenchRow> row = Status(Code::kInternal, "");
    try {
      row = isMarsit(o)       ? runMarsitSize(comm, o, bytes, hooks)
            : isCompressed(o) ? runCompressedSize(comm, o, bytes, hooks)
                              : runSize(comm, o, bytes, hooks);
    } catch (const std::bad_alloc&) {  // the buffers of a size past this machine's memory
      row = Status(Code::kInvalidArgument,
                   "cannot allocate the buffers of a " + std::to_string(bytes) + "-byte row (lower -e)");
    }
    if (!row.isOk()) {
      std::fprintf(stderr, "tsr-bench: rank %d: %s\n", comm.rank(), row.status().toString().c_str());
      return 1;
    }
    rows.push_back(row.value());
    failed |= !row.value().error.empty() || row.value().wrong > 0;
    if (printer) {
      std::fputs(formatRow(row.value(), o, n).c_str(), stdout);
      std::fputs(splitLine(row.value(), o, n).c_str(), stdout);
      std::fflush(stdout);
      if (json) json << jsonLine(row.value(), o, n) << std::flush;
    }
    if (!row.value().error.empty()) break;  // the communicator is unusable after a failure
  }
  double avg = averageBusbw(rows, o.collective, n);
  bool slow = o.minBusbw > 0 && avg < o.minBusbw;
  if (printer && o.format != "csv") {
    std::fputs(footer(rows, o, n).c_str(), stdout);
    if (slow) std::printf("# FAILED: average busbw %.4f GB/s is below --min-busbw %.4f\n", avg, o.minBusbw);
  }
  std::fflush(stdout);
  // Everyone leaves together: a rank exiting non-zero first would make tsrun stop rank 0
  // before it has printed its report.
  if (comm.health().isOk()) {
    auto done = comm.barrier();
    if (done.isOk()) done.value()->wait().ignore();
  }
  return failed || slow ? 1 : 0;
}
