#include "tools/soak/soak_options.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <limits>

#include "tools/common/byte_size.h"

namespace tsr::tools::soak {

namespace {
// A count or seed: decimal digits only, within 64 bits ("-5" wrapped to 2^64 - 5, and a
// number past 2^64 became its largest value).
Status parseCount(const std::string& text, const char* option, uint64_t* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  if (text.empty() || text[0] == '-' || text[0] == '+' || ec != std::errc() || ptr != end)
    return Status(Code::kInvalidArgument, std::string("tsr-soak: ") + option + " " + text +
                                              ": accepted values are whole numbers from 0 to " +
                                              std::to_string(std::numeric_limits<uint64_t>::max()));
  return Status::ok();
}
}  // namespace

Result<SoakOptions> parseSoakOptions(int argc, const char* const* argv) {
  SoakOptions o;
  std::string maxBytes = "16M";
  std::string ops = std::to_string(o.ops), cycles = std::to_string(o.cycles), seed = std::to_string(o.seed);
  CLI::App app{
      "tsr-soak: mixed collectives, every result checked, then communicator create/destroy "
      "cycles, with RSS, open file descriptors and /dev/shm entries watched (run it under tsrun)",
      "tsr-soak"};
  app.add_option("--ops", ops, "phase 1: mixed collectives to run")->type_name("UINT")->capture_default_str();
  app.add_option("--max-bytes", maxBytes, std::string("largest buffer of one collective per rank: ") + kByteSizeHelp)
      ->capture_default_str();
  app.add_option("--inflight", o.inflight, "most collectives in flight (posted, then waited in order)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--cycles", cycles, "phase 2: communicator create/destroy cycles")
      ->type_name("UINT")
      ->capture_default_str();
  app.add_option("--seed", seed, "seed of the operation sequence (the same on every rank)")
      ->type_name("UINT")
      ->capture_default_str();
  app.add_option("--algos", o.algos,
                 "communicators to draw from: all, or a comma-separated list of "
                 "shm, ring, rabenseifner, doubling, bruck, torus, hier, ring-hosts")
      ->capture_default_str();
  app.add_option("--warmup-pct", o.warmupPct, "share of the mixed collectives before the figures count")
      ->check(CLI::Range(0, 90))
      ->capture_default_str();
  app.add_option("--cycle-warmup-pct", o.cycleWarmupPct, "share of the cycles before the figures count")
      ->check(CLI::Range(0, 90))
      ->capture_default_str();
  app.add_option("--rss-bound-mib", o.rssBoundMiB,
                 "allowed RSS growth after warm-up, mixed collectives, less the scratch pools' idle memory (MiB)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--cycle-rss-bound-kib", o.cycleRssBoundKiB, "allowed RSS growth after warm-up, cycles (KiB)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--samples", o.samples, "figures taken per phase")->check(CLI::Range(1, 10000))->capture_default_str();
  app.add_option("--timeout-ms", o.timeoutMs,
                 "TSR_TIMEOUT_MS unless set: a collective that waits "
                 "longer fails, naming the peer")
      ->check(CLI::Range(1000, 86400000))
      ->capture_default_str();
  app.add_option("--json", o.jsonFile, "rank 0 also writes the final JSON line to this file");
  app.add_option("--trace", o.traceFile,
                 "every rank writes every sample of its figures to this CSV file "
                 "(%r: the rank)");
  std::string plantWrong;
  app.add_option("--plant-wrong", plantWrong)->group("");  // test hook: RANK:OP
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return Status(Code::kNotSupported, app.help());
  } catch (const CLI::ParseError& e) {
    return Status(Code::kInvalidArgument, std::string("tsr-soak: ") + e.what() + " (--help lists the options)");
  }
  TSR_RETURN_IF_ERROR(parseCount(ops, "--ops", &o.ops));
  TSR_RETURN_IF_ERROR(parseCount(cycles, "--cycles", &o.cycles));
  TSR_RETURN_IF_ERROR(parseCount(seed, "--seed", &o.seed));
  auto bytes = parseByteSize(maxBytes, "--max-bytes");  // as every tool reads sizes
  if (!bytes.isOk()) return Status(Code::kInvalidArgument, "tsr-soak: " + bytes.status().message());
  o.maxBytes = bytes.value();
  if (!plantWrong.empty()) {
    size_t colon = plantWrong.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument("no colon");
      o.plantWrongRank = std::stoi(plantWrong.substr(0, colon));
      o.plantWrongOp = std::stoull(plantWrong.substr(colon + 1));
    } catch (...) {
      return Status(Code::kInvalidArgument, "tsr-soak: --plant-wrong " + plantWrong + ": expected RANK:OP");
    }
  }
  return o;
}

}  // namespace tsr::tools::soak
