#include "tools/bench/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "runtime/config.h"

namespace tsr::tools::bench {

namespace {
// printf into a string of the length it takes (a header's ring of hundreds of ranks too).
std::string format(const char* fmt, auto... args) {
  const int length = std::snprintf(nullptr, 0, fmt, args...);
  if (length <= 0) return "";
  std::string out(static_cast<size_t>(length), '\0');
  std::snprintf(out.data(), out.size() + 1, fmt, args...);
  return out;
}

// RFC 4180: a field holding a comma, a quote or a line break is quoted, its quotes doubled.
std::string csvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// A JSON string, quotes included: quote, backslash and control characters escaped.
std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += format("\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The reduction of the row: "none" for the collectives that reduce nothing (all formats).
const char* redopName(const BenchOptions& o) {
  return o.collective == Collective::kAllreduce || o.collective == Collective::kReduceScatter ? reduceOpName(o.op)
                                                                                              : "none";
}

}  // namespace

double busFactor(Collective c, int n) {
  switch (c) {
    case Collective::kAllreduce:
      return n > 1 ? 2.0 * (n - 1) / n : 0.0;
    case Collective::kAllgather:
    case Collective::kReduceScatter:
      return n > 1 ? static_cast<double>(n - 1) / n : 0.0;
    case Collective::kBroadcast:
      return 1.0;
  }
  return 1.0;
}

double algbwGBs(const BenchRow& r) { return r.timeUs > 0 ? r.bytes / (r.timeUs * 1e3) : 0.0; }

double busbwGBs(const BenchRow& r, Collective c, int n) { return algbwGBs(r) * busFactor(c, n); }

double floorUs(const BenchRow& r, Collective c, int n, double rateGbit) {
  if (rateGbit <= 0) return 0;
  return busFactor(c, n) * r.bytes * 8 / (rateGbit * 1e9) * 1e6;
}

double compressedFloorUs(size_t count, int n, double rateGbit) {
  if (rateGbit <= 0) return 0;
  double wordsBytes = static_cast<double>((count + 63) / 64) * 8;
  return busFactor(Collective::kAllreduce, n) * wordsBytes * 8 / (rateGbit * 1e9) * 1e6;
}

double sparseFloorBytes(size_t count, int n, double density) {
  if (n <= 1) return 0;
  size_t block = (count + n - 1) / n;
  // As SparDL sizes its blocks (spardl.cc): ceil in double, at most the block.
  double kb = std::min(static_cast<double>(block), std::ceil(density * static_cast<double>(block)));
  return 2.0 * (n - 1) * kb * 8;
}

double sparseFloorUs(size_t count, int n, double density, double rateGbit) {
  if (rateGbit <= 0) return 0;
  return sparseFloorBytes(count, n, density) * 8 / (rateGbit * 1e9) * 1e6;
}

std::string header(const BenchOptions& o, int n, const std::string& note, const std::string& settings) {
  if (o.format == "peer")
    return format("# tsr-bench %s %s %s, world=%d, rate=%g Gbit/s, %s\n", collectiveName(o.collective),
                  dataTypeName(o.dtype), reduceOpName(o.op), n, o.rateGbit, note.c_str()) +
           settings +
           format("#%12s %10s %5s %11s %11s %11s %11s %11s %11s %7s ok\n", "size(B)", "count", "iters", "time(us)",
                  "min(us)", "max(us)", "algbw(GB/s)", "busbw(GB/s)", "floor(us)", "x_floor");
  if (o.format == "csv") return "size,count,type,redop,algo,nranks,time_us,algbw,busbw,wire_bytes,wrong,error\n";
  return format("# tsr-bench: %s, %d ranks, %s; %d warmup + %d timed iterations per size\n",
                collectiveName(o.collective), n, note.c_str(), o.warmup, o.iters) +
         settings + "# time: median over iterations of the slowest rank; wire: bytes one rank sent per op (max)\n" +
         (isMarsit(o) ? "# " + o.algo +
                            ": size is the logical f32 size (count*4, for algbw/busbw); split: "
                            "median of the slowest rank per field; floor: 2(N-1)/N*ceil(count/64)*8 B at --rate\n"
                      : std::string()) +
         (isCompressed(o) && hasSparseFloor(o)
              ? "# " + o.algo + " density " + densityText(o.density) +
                    (tensorFamilyOf(o) == "spardl" ? format(" teams %d sag %s", o.teams, o.sag.c_str()) : "") +
                    ": size is the logical f32 size (count*4); split: median of the slowest rank "
                    "per field; nnz: result non-zeros; floor: SparDL's 2(N-1)*k_b*8 B at --rate, "
                    "k_b = ceil(density*ceil(count/N))\n"
              : std::string()) +
         (isCompressed(o) && !hasSparseFloor(o)
              ? "# " + o.algo +
                    ": size is the logical f32 size (count*4); nnz: result non-zeros; a dense payload "
                    "(no sparse floor, --density unused)\n"
              : std::string()) +
         format("#%11s %12s %5s %6s %-13s %10s %9s %9s %12s %7s\n", "size(B)", "count", "type", "redop", "algo",
                "time(us)", "algbw", "busbw", "wire(B)", "#wrong") +
         format("#%11s %12s %5s %6s %-13s %10s %9s %9s %12s %7s\n", "", "(elements)", "", "", "", "", "(GB/s)",
                "(GB/s)", "", "");
}

std::string congestionControlLine(const std::string& name) {
  return name.empty() ? std::string() : "# tcp congestion control (rank 0's host): " + name + "\n";
}

std::string tcpCongestionControl() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string name;
  in >> name;
  return name;
}

std::string settingsLine(const std::map<std::string, std::string>& env) {
  static const std::set<std::string> launcher = {"TSR_RANK",  "TSR_WORLD_SIZE", "TSR_LOCAL_RANK", "TSR_LOCAL_SIZE",
                                                 "TSR_PEERS", "TSR_JOB_SECRET", "TSR_JOB_ID",     "TSR_LAUNCHER_WATCH",
                                                 "TSR_HOST",  "TSR_IFACE",      "TSR_ADDR"};
  std::set<std::string> tessera;
  for (const auto& entry : runtime::configTable()) tessera.insert(entry.name);
  std::string line;
  for (const auto& [name, value] : env) {  // a std::map: already sorted
    bool ucx = name.rfind("UCX_", 0) == 0;
    if (!ucx && (!tessera.count(name) || launcher.count(name))) continue;
    line += " " + name + "=" + value;
  }
  return "# settings:" + (line.empty() ? std::string(" defaults (no UCX_ or TSR_ settings)") : line) + "\n";
}

// A failed size's error under its row, each of its lines a comment.
static std::string errorComment(const std::string& what) {
  std::string error = what;
  for (size_t at = 0; (at = error.find('\n', at)) != std::string::npos; at += 5) error.replace(at, 1, "\n#   ");
  return "#   error: " + error + "\n";
}

std::string formatRow(const BenchRow& r, const BenchOptions& o, int n) {
  const char* redop = redopName(o);
  if (o.format == "peer") {
    double fl = floorUs(r, o.collective, n, o.rateGbit);
    if (!r.error.empty())  // dashes, not zeros that read as data; the floor is the size's own
      return format(" %12zu %10zu %5d %11s %11s %11s %11s %11s %11.0f %7s FAIL\n", r.bytes, r.count, r.iters, "-", "-",
                    "-", "-", "-", fl, "-") +
             errorComment(r.error);
    std::string s = format(" %12zu %10zu %5d %11.0f %11.0f %11.0f %11.3f %11.3f %11.0f ", r.bytes, r.count, r.iters,
                           r.timeUs, r.minUs, r.maxUs, algbwGBs(r), busbwGBs(r, o.collective, n), fl);
    s += fl > 0 ? format("%7.2f", r.timeUs / fl) : format("%7s", "-");
    // "-": not checked (-c 0); the peers always check, so only tsr-bench prints it.
    const char* ok = !r.error.empty() || r.wrong > 0 ? " FAIL\n" : r.wrong < 0 ? " -\n" : " OK\n";
    return s + ok;
  }
  // CSV is for programs: bandwidths in %g, so an 8-byte row's 2.5e-06 GB/s does not print as 0.
  // A size that failed has empty figures (no 0 wrong) and its error, quoted as RFC 4180 says.
  if (o.format == "csv") {
    std::string head =
        format("%zu,%zu,%s,%s,", r.bytes, r.count, dataTypeName(o.dtype), redop) + csvField(r.algo) + format(",%d,", n);
    if (!r.error.empty()) return head + ",,,,," + csvField(r.error) + "\n";
    return head + format("%.2f,%.6g,%.6g,%llu,%lld,\n", r.timeUs, algbwGBs(r), busbwGBs(r, o.collective, n),
                         static_cast<unsigned long long>(r.wireBytes), static_cast<long long>(r.wrong));
  }
  if (!r.error.empty())  // no figures for a size that failed: dashes, not zeros that read as data
    return format(" %11zu %12zu %5s %6s %-13s %10s %9s %9s %12s %7s\n", r.bytes, r.count, dataTypeName(o.dtype), redop,
                  r.algo.c_str(), "-", "-", "-", "-", "FAIL") +
           errorComment(r.error);
  std::string wrong = r.wrong < 0 ? "N/A" : std::to_string(r.wrong);
  return format(" %11zu %12zu %5s %6s %-13s %10.1f %9.3f %9.3f %12llu %7s\n", r.bytes, r.count, dataTypeName(o.dtype),
                redop, r.algo.c_str(), r.timeUs, algbwGBs(r), busbwGBs(r, o.collective, n),
                static_cast<unsigned long long>(r.wireBytes), wrong.c_str());
}

// Over the sizes measured: a size that failed has no bandwidth (not 0 GB/s to average in).
double averageBusbw(const std::vector<BenchRow>& rows, Collective c, int n) {
  double sum = 0;
  size_t measured = 0;
  for (const auto& r : rows)
    if (r.error.empty()) sum += busbwGBs(r, c, n), ++measured;
  return measured ? sum / measured : 0;
}

std::string footer(const std::vector<BenchRow>& rows, const BenchOptions& o, int n) {
  int64_t wrong = 0;
  int failed = 0;
  for (const auto& r : rows) {
    wrong += r.wrong > 0 ? r.wrong : 0;
    failed += !r.error.empty();
  }
  std::string s =
      format("# Out of bounds values : %lld %s\n", static_cast<long long>(wrong), wrong || failed ? "FAILED" : "OK");
  s += format("# Avg bus bandwidth    : %.4f GB/s\n", averageBusbw(rows, o.collective, n));
  if (failed) s += format("# Failed sizes        : %d\n", failed);
  return s;
}

namespace {
// x_floor as text: "-" where there is no floor (no --rate, one rank).
std::string ratio(double timeUs, double floor) { return floor > 0 ? format("%.2f", timeUs / floor) : "-"; }
}  // namespace

std::string splitLine(const BenchRow& r, const BenchOptions& o, int n) {
  if (r.hasSparse) {
    const SparseSplit& s = r.sparse;
    double fl = s.floorApplies ? sparseFloorUs(r.count, n, o.density, o.rateGbit) : 0;
    std::string head = s.timed ? format("#   split(us) select %.1f merge %.1f local %.1f wire %.1f total %.1f",
                                        s.select, s.merge, s.local, s.wire, s.total)
                               : std::string("#   sparse");
    if (!s.floorApplies)
      return format("#   compressed nnz %llu sent(B) %llu\n", static_cast<unsigned long long>(s.nonZeros),
                    static_cast<unsigned long long>(r.wireBytes));
    return head + format(" nnz %llu sent(B) %llu floor(us) %.1f x_floor %s\n",
                         static_cast<unsigned long long>(s.nonZeros), static_cast<unsigned long long>(r.wireBytes), fl,
                         ratio(r.timeUs, fl).c_str());
  }
  if (!r.hasSplit) return "";
  const StepSplit& s = r.split;
  double fl = compressedFloorUs(r.count, n, o.rateGbit);
  return format(
      "#   split(us) prepare %.1f pack %.1f wire %.1f merge %.1f decompress %.1f compensate %.1f "
      "total %.1f sent(B) %llu floor(us) %.1f x_floor %s\n",
      s.prepare, s.pack, s.wire, s.merge, s.decompress, s.compensate, s.total,
      static_cast<unsigned long long>(r.wireBytes), fl, ratio(r.timeUs, fl).c_str());
}

std::string jsonLine(const BenchRow& r, const BenchOptions& o, int n) {
  std::string split;
  if (r.hasSplit) {
    const StepSplit& s = r.split;
    double fl = compressedFloorUs(r.count, n, o.rateGbit);
    std::string x = ratio(r.timeUs, fl);
    split = format(
        ", \"split\": {\"prepare\": %.3f, \"pack\": %.3f, \"wire\": %.3f, \"merge\": %.3f, "
        "\"decompress\": %.3f, \"compensate\": %.3f, \"total\": %.3f}, \"floor_us\": %.3f, "
        "\"x_floor\": %s",
        s.prepare, s.pack, s.wire, s.merge, s.decompress, s.compensate, s.total, fl, x == "-" ? "null" : x.c_str());
  }
  if (r.hasSparse) {
    const SparseSplit& s = r.sparse;
    double fl = s.floorApplies ? sparseFloorUs(r.count, n, o.density, o.rateGbit) : 0;
    std::string x = ratio(r.timeUs, fl);
    split = ", \"sparse\": {" +
            (s.timed ? format("\"select\": %.3f, \"merge\": %.3f, \"local\": %.3f, \"wire\": %.3f, \"total\": %.3f, ",
                              s.select, s.merge, s.local, s.wire, s.total)
                     : std::string()) +
            format("\"nnz\": %llu}, \"density\": %s, \"floor_us\": %.3f, \"x_floor\": %s",
                   static_cast<unsigned long long>(s.nonZeros), densityText(o.density).c_str(), fl,
                   x == "-" ? "null" : x.c_str());
  }
  // Every iteration, so a bimodal run shows (the median hides which iterations were slow).
  std::string iters;
  for (size_t i = 0; i < r.itersUs.size(); ++i) iters += format(i ? ", %.3f" : "%.3f", r.itersUs[i]);
  if (!r.itersUs.empty()) split += ", \"iter_us\": [" + iters + "]";
  std::string line =
      format("{\"collective\": \"%s\", \"size\": %zu, \"count\": %zu, \"type\": \"%s\", \"redop\": \"%s\", \"algo\": ",
             collectiveName(o.collective), r.bytes, r.count, dataTypeName(o.dtype), redopName(o)) +
      jsonString(r.algo) + format(", \"nranks\": %d, ", n);
  // A size that failed: null figures (no 0 wrong) and its error.
  if (!r.error.empty())
    return line + "\"time_us\": null, \"algbw\": null, \"busbw\": null, \"wire_bytes\": null, \"wrong\": null" + split +
           ", \"error\": " + jsonString(r.error) + "}\n";
  return line +
         format("\"time_us\": %.3f, \"algbw\": %.6f, \"busbw\": %.6f, \"wire_bytes\": %llu, \"wrong\": %lld", r.timeUs,
                algbwGBs(r), busbwGBs(r, o.collective, n), static_cast<unsigned long long>(r.wireBytes),
                static_cast<long long>(r.wrong)) +
         split + "}\n";
}

}  // namespace tsr::tools::bench
