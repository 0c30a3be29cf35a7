// tsr-sim: replay Tessera's own plans for a collective in SimGrid and print the time.
//
//   tsr-sim --ranks 8 --algo ring --size 64MiB --bw 1Gbps --lat 20us
//   tsr-sim --ranks 64 --platform fattree --leaf-hosts 16 --spines 4 --algo auto --size 1MiB
//   tsr-sim --ranks 16 --ranks-per-host 8 --algo hier --size 256MiB
//   tsr-sim --ranks 64 --ranks-per-host 8 --platform gpuhosts --bw 100Gbps --host-bw 300GBps --algo auto
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <utility>

#include "tools/common/byte_size.h"
#include "tools/sim/replay.h"
#include "tools/sim/sim_job.h"
#include "tools/sim/units.h"

namespace {

using namespace tsr;
using namespace tsr::sim;

int fail(const Status& status) {
  std::cerr << "tsr-sim: error: " << status.message() << "\n";
  return 1;
}

// A command line that asks for something tsr-sim does not model: exit 2, as CLI11's own usage
// errors (and tsr-topo's, tsrun's).
int usageError(const Status& status) {
  std::cerr << "tsr-sim: " << status.message() << "\nRun 'tsr-sim --help' for usage.\n";
  return 2;
}

int run(int argc, char** argv) {
  CLI::App app{"tsr-sim: simulate a Tessera collective by replaying its plans in SimGrid"};
  SimJob job;
  PlatformSpec platform;
  ReplayOptions replayOptions;
  std::string size = "64MiB", chunk = "512KiB", bw = "10Gbps", lat = "20us", hostBw = "4GBps", hostLat = "3us",
              reduceRate = "6GBps", copyRate = "8GBps", packRate = "13GBps", selectRate = "3GBps", passRate = "16GBps",
              dtype = "f32", op = "sum", minMessage = "64KiB";
  bool noHeaders = false, planOnly = false;
  app.add_option("-n,--ranks", job.ranks, "Ranks")->check(CLI::Range(1, 1 << 20));
  app.add_option("--ranks-per-host", job.ranksPerHost, "Ranks per host (ranks h*R.. share host h)")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--collective", job.collective, "allreduce | allgather");
  app.add_option("--algo", job.algorithm,
                 "auto (the runtime's cost model) | ring | rabenseifner | doubling | torus | hier | marsit | "
                 "marsit-torus | marsit-2level (f32 signs) | "
                 "spardl (f32, --density, --teams); allgather: auto | ring | bruck");
  app.add_option("--density", job.density, "spardl: the share of each block sent (k_b = ceil(density * block))");
  app.add_option("--teams", job.teams, "spardl: teams (R-SAG; a power of two dividing the ranks)")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--size", size,
                 std::string("Buffer (allreduce) or each rank's part (allgather): 64MiB, 4K (4096), ...; ") +
                     tools::kByteSizeHelp);
  app.add_option("--dtype", dtype, "f32 | f64 | f16 | bf16 | i32 | i64");
  app.add_option("--op", op, "sum | avg | min | max | prod | band | bor | bxor (i32, i64)");
  app.add_option("--chunk", chunk, "Pipelining chunk (TSR_CHUNK_BYTES): 1KiB .. 1GiB");
  app.add_option("--min-message", minMessage,
                 "Rabenseifner/doubling/Bruck: a step's consecutive blocks to one peer travel together up to "
                 "this size (TSR_MIN_MESSAGE_BYTES): 1 B .. 1GiB");
  app.add_option("--window", job.window, "Staging window (TSR_WINDOW)")->check(CLI::Range(1, 64));
  app.add_option("--arrival", job.arrival, "Reduce on arrival: auto | on | off (TSR_ARRIVAL_REDUCE)");
  app.add_option("--platform", platform.kind, "switch | fattree | gpuhosts | xml");
  app.add_option("--xml", platform.xmlFile, "SimGrid platform file (--platform xml); hosts by name order");
  app.add_option("--bw", bw, "Network link rate: 1Gbps, 12.5GBps, ...");
  app.add_option("--lat", lat, "Host-to-host latency through one switch: 20us, ...");
  app.add_option("--host-bw", hostBw, "Same-host rate (ranks per host > 1); gpuhosts: each GPU's interconnect link");
  app.add_option("--host-lat", hostLat, "Same-host latency");
  app.add_option("--nics-per-host", platform.nicsPerHost,
                 "gpuhosts: NICs per host, each --bw (0 = one per GPU; fewer: GPUs share them)")
      ->check(CLI::Range(0, 1 << 16));
  app.add_option("--leaf-hosts", platform.leafHosts, "Fat tree, gpuhosts: hosts per leaf switch")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--spines", platform.spines,
                 "Fat tree, gpuhosts: spine switches (0 = one per NIC under a leaf: non-blocking)")
      ->check(CLI::Range(0, 1 << 16));
  app.add_option("--reduce-rate", reduceRate, "Reduction throughput, bytes/s of data reduced (0 = free)");
  app.add_option("--copy-rate", copyRate, "Copy / divide throughput (0 = free)");
  app.add_option("--pack-rate", packRate,
                 "Marsit: sign packing and bit merge throughput, bytes/s of the f32 elements (0 = free)");
  app.add_option("--pass-rate", passRate,
                 "Marsit: its passes over its vectors outside the plans (sign finish, momentum hand-off), bytes "
                 "read and written per second (0 = free)");
  app.add_option("--select-rate", selectRate,
                 "SparDL: top-k selection throughput, bytes/s of the f32 elements scanned (0 = free)");
  app.add_option("--network", replayOptions.network, "ideal (latency + bytes/rate) | lv08 (SimGrid's TCP model)");
  app.add_option("--pair-window", replayOptions.pairWindow,
                 "Transfers in flight per (sender, receiver); the rest queue in order (0 = no bound)")
      ->check(CLI::Range(0, 1 << 16));
  app.add_flag("--no-headers", noHeaders, "Leave out the 32-byte argument headers");
  app.add_flag("--plan-only", planOnly,
               "Build the plans and print what they send (and, with auto, the pick); no replay");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  // Sizes read as tsr-bench reads them (tools/common/byte_size.h); their errors name the option.
  auto bytes = tools::parseByteSize(size, "--size");
  auto chunkBytes = tools::parseByteSize(chunk, "--chunk"),
       minMessageBytes = tools::parseByteSize(minMessage, "--min-message");
  for (const Status* s : {&bytes.status(), &chunkBytes.status(), &minMessageBytes.status()})
    if (!s->isOk()) return usageError(*s);
  auto rate = parseRate(bw), hostRate = parseRate(hostBw), reduce = parseRate(reduceRate), copy = parseRate(copyRate),
       pack = parseRate(packRate), select = parseRate(selectRate), pass = parseRate(passRate);
  auto latency = parseTime(lat), hostLatency = parseTime(hostLat);
  const std::pair<const char*, const Status*> quantities[] = {
      {"--bw", &rate.status()},        {"--host-bw", &hostRate.status()}, {"--reduce-rate", &reduce.status()},
      {"--copy-rate", &copy.status()}, {"--pack-rate", &pack.status()},   {"--select-rate", &select.status()},
      {"--pass-rate", &pass.status()}, {"--lat", &latency.status()},      {"--host-lat", &hostLatency.status()}};
  for (const auto& [option, s] : quantities)
    if (!s->isOk()) return usageError(Status(Code::kInvalidArgument, std::string(option) + ": " + s->message()));
  auto type = parseDataType(dtype);
  if (!type)
    return usageError(
        Status(Code::kInvalidArgument, "--dtype " + dtype + ": accepted values are f32|f64|f16|bf16|i32|i64"));
  auto reduceOp = parseReduceOp(op);
  if (!reduceOp)
    return usageError(
        Status(Code::kInvalidArgument, "--op " + op + ": accepted values are sum|avg|min|max|prod|band|bor|bxor"));
  job.bytes = bytes.value();
  job.dtype = *type;
  job.op = *reduceOp;
  job.chunkBytes = chunkBytes.value();
  job.minMessageBytes = minMessageBytes.value();
  platform.rate = rate.value();
  platform.latency = latency.value();
  platform.hostRate = hostRate.value();
  platform.hostLatency = hostLatency.value();
  replayOptions.reduceRate = reduce.value();
  replayOptions.copyRate = copy.value();
  replayOptions.packRate = pack.value();
  replayOptions.passRate = pass.value();
  replayOptions.selectRate = select.value();
  replayOptions.headers = !noHeaders;
  job.links.net = {platform.latency, platform.rate};
  if (platform.kind == "gpuhosts")  // the cost model spreads a host's flows over its NICs
    job.links.netNics = platform.nicsPerHost > 0 ? std::min(platform.nicsPerHost, job.ranksPerHost) : job.ranksPerHost;
  job.links.host = {platform.hostLatency, platform.hostRate};
  Status valid = validate(platform);
  if (!valid.isOk()) return fail(valid);

  Status usable = validateJob(job);
  if (!usable.isOk()) return usageError(usable);
  auto plans = buildJobPlans(job);
  if (!plans.isOk()) return fail(plans.status());
  const JobPlans& jp = plans.value();
  if (planOnly) {
    for (const std::string& why : jp.refused) std::printf("not %s\n", why.c_str());
    const uint64_t messages = messageCount(jp);
    std::printf("plan %s %s: %d ranks (%d hosts x %d), %llu B payload, %llu messages\n", job.collective.c_str(),
                jp.algorithm.c_str(), job.ranks, jp.hosts, job.ranksPerHost,
                static_cast<unsigned long long>(wireBytes(jp)), static_cast<unsigned long long>(messages));
    return 0;
  }
  auto result = replay(jp, platform, replayOptions, job.ranksPerHost);
  if (!result.isOk()) return fail(result.status());
  const ReplayResult& r = result.value();
  for (const std::string& why : jp.refused) std::printf("not %s\n", why.c_str());
  double algbw = r.seconds > 0 ? algoBytes(job) / r.seconds : 0;
  std::printf("%s %s: %d ranks (%d hosts x %d), %s %s, %s %s %s\n", job.collective.c_str(), jp.algorithm.c_str(),
              job.ranks, jp.hosts, job.ranksPerHost, formatBytes(static_cast<double>(job.bytes)).c_str(),
              dataTypeName(job.dtype), platform.kind.c_str(), formatRate(platform.rate).c_str(),
              formatTime(platform.latency).c_str());
  std::printf("time %s  algbw %s  busbw %s\n", formatTime(r.seconds).c_str(), formatRate(algbw).c_str(),
              formatRate(algbw * busFactor(job.collective, job.ranks)).c_str());
  std::printf("wire %llu B payload (plans: %llu B), %llu B headers, %llu messages, compute %s (all ranks)\n",
              static_cast<unsigned long long>(r.payloadBytes), static_cast<unsigned long long>(wireBytes(jp)),
              static_cast<unsigned long long>(r.headerBytes), static_cast<unsigned long long>(r.messages),
              formatTime(r.computeSeconds).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
