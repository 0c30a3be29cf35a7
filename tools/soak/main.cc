// tsr-soak: a long mixed run of Tessera's collectives, every result checked, then communicator
// create/destroy cycles, with each rank's RSS, open file descriptors, /dev/shm entries and
// shared-memory mappings watched for growth after warm-up. Run it under tsrun:
//   tsrun -n 4 build/bin/tsr-soak --ops 20000 --max-bytes 16M --cycles 500
// Every rank prints one summary line; rank 0 prints the communicators, the algorithms that
// served each collective, and a final JSON line. Exit status: 0; 1 when a result is wrong, a
// collective fails or a figure grows past its bound (the rank, the operation or the figure
// named); 2 for usage errors and communicators that cannot be created.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/communicator.h"
#include "runtime/config.h"
#include "tools/soak/soak_options.h"
#include "tools/soak/soak_plan.h"
#include "tools/soak/soak_resources.h"
#include "tools/soak/soak_runner.h"

using namespace tsr;
using namespace tsr::tools::soak;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

std::string mib(int64_t kib) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", kib / 1024.0);
  return text;
}

std::string figuresText(const PhaseVerdict& v, bool pools) {
  const Figures& a = v.start.figures;
  const Figures& b = v.end.figures;
  return "RSS " + mib(a.rssKiB) + " -> " + mib(b.rssKiB) + " MiB (peak " + mib(v.peak.rssKiB) + "), fds " +
         std::to_string(a.fds) + " -> " + std::to_string(b.fds) + ", /dev/shm " + std::to_string(a.shmEntries) +
         " -> " + std::to_string(b.shmEntries) + ", shm maps " + std::to_string(a.shmMaps) + " -> " +
         std::to_string(b.shmMaps) +
         (pools ? ", scratch pools " + mib(a.poolIdleKiB) + " -> " + mib(b.poolIdleKiB) + " MiB idle in " +
                      std::to_string(a.poolBlocks) + " -> " + std::to_string(b.poolBlocks) + " blocks"
                : "");
}

// Every sample of both phases as CSV (--trace; %r in the name becomes the rank).
void writeTrace(std::string name, int rank, const RankRecord& r) {
  for (size_t at; (at = name.find("%r")) != std::string::npos;) name.replace(at, 2, std::to_string(rank));
  std::ofstream out(name);
  out << "phase,at,rss_kib,fds,shm_entries,shm_maps,pool_idle_kib,pool_blocks,rss_anon_kib,rss_shmem_kib\n";
  for (const auto& [phase, samples] : {std::pair{"mixed", &r.mixed.samples}, std::pair{"cycles", &r.cycles.samples}})
    for (const Sample& s : *samples)
      out << phase << "," << s.at << "," << s.figures.rssKiB << "," << s.figures.fds << "," << s.figures.shmEntries
          << "," << s.figures.shmMaps << "," << s.figures.poolIdleKiB << "," << s.figures.poolBlocks << ","
          << s.figures.rssAnonKiB << "," << s.figures.rssShmemKiB << "\n";
  if (!out) std::fprintf(stderr, "tsr-soak: rank %d: cannot write --trace %s\n", rank, name.c_str());
}

// One rank's figures as numbers, for the all-gather to rank 0.
constexpr size_t kFields = 6 + 2 * 16;
void putFigures(std::vector<int64_t>& out, const Figures& f) {
  out.insert(out.end(), {f.rssKiB, f.fds, f.shmEntries, f.shmMaps});
}
std::vector<int64_t> encode(bool ok, const RankRecord& r, const PhaseVerdict& mixed, const PhaseVerdict& cycles) {
  std::vector<int64_t> out{ok ? 1 : 0,
                           static_cast<int64_t>(r.mixed.done),
                           static_cast<int64_t>(r.mixed.bytes),
                           static_cast<int64_t>(r.mixed.seconds * 1e6),
                           static_cast<int64_t>(r.cycles.done),
                           static_cast<int64_t>(r.cycles.seconds * 1e6)};
  for (const PhaseVerdict* v : {&mixed, &cycles}) {
    putFigures(out, v->before.figures);
    putFigures(out, v->start.figures);
    putFigures(out, v->end.figures);
    putFigures(out, v->peak);
  }
  return out;
}

std::string jsonPhaseFigures(const int64_t* f) {  // before, start, end, peak x 4 figures
  const char* names[] = {"rss_kib", "fds", "shm_entries", "shm_maps"};
  std::string s;
  for (int k = 0; k < 4; ++k)
    s += std::string(k ? "," : "") + "\"" + names[k] + "\":{\"before\":" + std::to_string(f[k]) +
         ",\"start\":" + std::to_string(f[4 + k]) + ",\"end\":" + std::to_string(f[8 + k]) +
         ",\"peak\":" + std::to_string(f[12 + k]) + "}";
  return "{" + s + "}";
}

std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return out;
}

// The final report: the options ("ops", "cycles_asked", ...), each phase's totals ("mixed",
// "cycles"), every rank's figures, the algorithms that served; each key once.
std::string jsonLine(const SoakOptions& o, int n, const std::vector<int64_t>& all, const RankRecord& mine, bool ok) {
  std::ostringstream j;
  const int64_t* r0 = all.data();
  double mixedS = r0[3] / 1e6, cycleS = r0[5] / 1e6;
  j << "{\"tool\":\"tsr-soak\",\"ranks\":" << n << ",\"seed\":" << o.seed << ",\"ops\":" << o.ops
    << ",\"max_bytes\":" << o.maxBytes << ",\"inflight\":" << o.inflight << ",\"cycles_asked\":" << o.cycles
    << ",\"warmup_pct\":" << o.warmupPct << ",\"cycle_warmup_pct\":" << o.cycleWarmupPct
    << ",\"rss_bound_mib\":" << o.rssBoundMiB << ",\"cycle_rss_bound_kib\":" << o.cycleRssBoundKiB
    << ",\"rss_judged\":" << (kAddressSanitizer ? "false" : "true") << ",\"mixed\":{\"ops_done\":" << r0[1]
    << ",\"bytes\":" << r0[2] << ",\"seconds\":" << mixedS << ",\"ops_per_s\":" << (mixedS > 0 ? r0[1] / mixedS : 0)
    << "},\"cycles\":{\"done\":" << r0[4] << ",\"seconds\":" << cycleS
    << ",\"ms_per_cycle\":" << (r0[4] ? cycleS * 1e3 / r0[4] : 0) << "},\"per_rank\":[";
  for (int r = 0; r < n; ++r) {
    const int64_t* f = all.data() + static_cast<size_t>(r) * kFields;
    j << (r ? "," : "") << "{\"rank\":" << r << ",\"ok\":" << (f[0] ? "true" : "false")
      << ",\"mixed\":" << jsonPhaseFigures(f + 6) << ",\"cycles\":" << jsonPhaseFigures(f + 22) << "}";
  }
  j << "],\"served\":{";
  bool first = true;
  for (const auto& [what, count] : mine.served) {
    j << (first ? "" : ",") << "\"" << jsonEscape(what) << "\":" << count;
    first = false;
  }
  j << "},\"ok\":" << (ok ? "true" : "false") << "}";
  return j.str();
}

void say(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = parseSoakOptions(argc, argv);
  if (!parsed.isOk()) {
    bool help = parsed.status().code() == Code::kNotSupported;
    std::fprintf(help ? stdout : stderr, "%s\n", parsed.status().message().c_str());
    return help ? 0 : 2;
  }
  const SoakOptions& o = parsed.value();
  auto control = createCommunicator(nullptr, o);  // lives through both phases: the final report
  if (!control.isOk()) {
    std::fprintf(stderr, "tsr-soak: %s\n", control.status().toString().c_str());
    return 2;
  }
  const int rank = control.value()->rank(), n = control.value()->size();
  auto chosen = selectSetups(n, o.algos);
  if (!chosen.isOk()) {
    std::fprintf(stderr, "tsr-soak: %s\n", chosen.status().message().c_str());
    return 2;
  }
  const std::vector<Setup>& setups = chosen.value();
  if (rank == 0) {
    say("tsr-soak: " + std::to_string(n) + " ranks, seed " + std::to_string(o.seed) + ": " + std::to_string(o.ops) +
        " mixed collectives up to " + std::to_string(o.maxBytes) + " bytes, up to " + std::to_string(o.inflight) +
        " in flight, then " + std::to_string(o.cycles) + " communicator create/destroy cycles; figures judged after " +
        std::to_string(o.warmupPct) + "% and " + std::to_string(o.cycleWarmupPct) + "% warm-up, RSS bounds +" +
        mib(static_cast<int64_t>(o.rssBoundMiB * 1024)) + " MiB and +" +
        std::to_string(static_cast<int64_t>(o.cycleRssBoundKiB)) + " KiB" +
        (kAddressSanitizer ? " (RSS not judged: AddressSanitizer keeps freed memory in quarantine)" : ""));
    for (const Setup& s : setups) say("  communicator " + s.describe(n));
  }

  RankRecord record;
  std::vector<std::unique_ptr<runtime::Communicator>> comms;
  for (const Setup& s : setups) {
    auto c = createCommunicator(&s, o);
    if (!c.isOk()) {
      std::fprintf(stderr, "tsr-soak: rank %d: communicator %s: %s\n", rank, s.name.c_str(),
                   c.status().toString().c_str());
      return 2;
    }
    comms.push_back(c.take());
  }
  std::vector<runtime::Communicator*> raw;
  for (auto& c : comms) raw.push_back(c.get());
  runMixed(raw, setups, o, &record);
  if (record.failure.empty()) {
    comms.clear();
    if (rank == 0) {
      say("tsr-soak: mixed collectives done; algorithms that served them (collective on communicator: algorithm):");
      for (const auto& [what, count] : record.served) say("  " + what + "  " + std::to_string(count));
    }
    runCycles(setups, o, rank, n, &record);
  }
  if (!record.failure.empty()) {
    // Stop every rank: the peers' pending and next calls fail, naming this rank.
    say("tsr-soak: FAILED: " + record.failure);
    for (auto& c : comms) c->abort("tsr-soak stopped on rank " + std::to_string(rank) + ": " + record.failure);
    control.value()->abort("tsr-soak stopped on rank " + std::to_string(rank));
    return 1;
  }

  PhaseVerdict mixed = judgePhase("mixed collectives", rank, record.mixed.samples, record.mixed.warmupEnd,
                                  static_cast<int64_t>(o.rssBoundMiB * 1024), !kAddressSanitizer);
  PhaseVerdict cycles = judgePhase("create/destroy cycles", rank, record.cycles.samples, record.cycles.warmupEnd,
                                   static_cast<int64_t>(o.cycleRssBoundKiB), !kAddressSanitizer);
  std::vector<std::string> failures = mixed.failures;
  failures.insert(failures.end(), cycles.failures.begin(), cycles.failures.end());
  if (mixed.end.figures.shmEntries > mixed.start.figures.shmEntries ||
      cycles.end.figures.shmEntries > cycles.start.figures.shmEntries) {
    std::string names;
    for (const std::string& name : shmEntryNames()) names += " " + name;
    failures.push_back("rank " + std::to_string(rank) + ": /dev/shm now holds:" + names);
  }
  const bool ok = failures.empty();
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.1f s (%.1f ops/s)", record.mixed.seconds,
                record.mixed.seconds > 0 ? record.mixed.done / record.mixed.seconds : 0);
  char cycleMs[32];
  std::snprintf(cycleMs, sizeof cycleMs, "%.1f",
                record.cycles.done ? record.cycles.seconds * 1e3 / record.cycles.done : 0);
  say("rank " + std::to_string(rank) + ": mixed: " + std::to_string(record.mixed.done) + " ops, " +
      mib(static_cast<int64_t>(record.mixed.bytes / 1024)) + " MiB, " + rate + ", after op " +
      std::to_string(mixed.start.at) + ": " + figuresText(mixed, true) +
      "; cycles: " + std::to_string(record.cycles.done) + ", " + cycleMs + " ms each, after cycle " +
      std::to_string(cycles.start.at) + ": " + figuresText(cycles, false) + (ok ? "; OK" : "; FAILED"));
  for (const std::string& f : failures) say("tsr-soak: FAILED: " + f);
  if (!o.traceFile.empty()) writeTrace(o.traceFile, rank, record);

  std::vector<int64_t> mine = encode(ok, record, mixed, cycles);
  std::vector<int64_t> all(kFields * static_cast<size_t>(n));
  auto req = control.value()->allgather(mine.data(), all.data(), kFields, DataType::kI64);
  Status st = req.isOk() ? req.value()->wait() : req.status();
  if (!st.isOk()) {
    std::fprintf(stderr, "tsr-soak: rank %d: cannot gather the figures: %s\n", rank, st.toString().c_str());
    return 1;
  }
  bool allOk = true;
  for (int r = 0; r < n; ++r) allOk = allOk && all[static_cast<size_t>(r) * kFields] == 1;
  if (rank == 0) {
    std::string line = jsonLine(o, n, all, record, allOk);
    say(line);
    if (!o.jsonFile.empty()) {
      std::ofstream json(o.jsonFile);
      json << line << "\n";
      if (!json) std::fprintf(stderr, "tsr-soak: cannot write --json %s\n", o.jsonFile.c_str());
    }
    say(allOk ? "tsr-soak: PASSED" : "tsr-soak: FAILED (see the lines above)");
  }
  // Everyone leaves together, so no rank's exit ends the job before rank 0 has reported.
  auto done = control.value()->barrier();
  if (done.isOk()) done.value()->wait().ignore();
  return allOk ? 0 : 1;
}
