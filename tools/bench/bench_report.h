// tsr-bench results and their formats: the nccl-tests style table, CSV, JSON lines, and the
// peer benchmarks' 11-column format (../shared/tools/bench_mpi_allreduce.c) that
// ../shared/tools/summarize.py reads. Pure: no I/O beyond the strings it returns.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/bench/bench_options.h"

namespace tsr::tools::bench {

// Where a compressed step spent its time (Marsit's StepTimes): per field the median over
// iterations of the max over ranks, microseconds.
struct StepSplit {
  double prepare = 0, pack = 0, wire = 0, merge = 0, decompress = 0, compensate = 0, total = 0;
};

// A sparse step (SparDL's StepStats; topk has only the non-zeros): per field the
// median over iterations of the max over ranks, microseconds.
struct SparseSplit {
  bool timed = false;  // select .. total filled (spardl)
  double select = 0, merge = 0, local = 0, wire = 0, total = 0;
  uint64_t nonZeros = 0;     // of the result
  bool floorApplies = true;  // SparDL and top-k; not for a dense payload (onebit)
};

struct BenchRow {
  size_t bytes = 0;  // message size: the whole buffer (allgather: the gathered output)
  size_t count = 0;  // elements per rank, as passed to the collective
  int iters = 0;
  double timeUs = 0;  // median over iterations of the max over ranks
  double minUs = 0, maxUs = 0;
  std::vector<double> itersUs;  // each timed iteration's max over ranks, in order (--json)
  uint64_t wireBytes = 0;       // bytes this rank sent per op, max over ranks
  int64_t wrong = 0;            // wrong elements over all ranks (-1: not checked)
  std::string algo;
  std::string error;      // a failed collective's message
  bool hasSplit = false;  // Marsit rows: `split` is filled and the compressed floor applies
  StepSplit split;
  bool hasSparse = false;  // spardl / compressed rows: `sparse` is filled, the sparse floor applies
  SparseSplit sparse;
};

// nccl-tests' bus bandwidth factor: allreduce 2(n-1)/n, reduce-scatter and all-gather (n-1)/n,
// broadcast 1.
double busFactor(Collective c, int nranks);
double algbwGBs(const BenchRow& r);
double busbwGBs(const BenchRow& r, Collective c, int nranks);
// 2(n-1)/n * bytes * 8 / rate for allreduce (the physical floor of a ring on one link per
// rank), in microseconds; 0 when rate is 0.
double floorUs(const BenchRow& r, Collective c, int nranks, double rateGbit);

// Marsit's floor: its ring sends 2(n-1)/n of ceil(count/64) 64-bit words per rank (one bit per
// element), in microseconds at rateGbit; 0 when rate is 0 or n is 1.
double compressedFloorUs(size_t count, int nranks, double rateGbit);

// SparDL's wire floor (SRS + Bruck, T = 1): each rank sends 2(n-1) blocks of k_b (u32 index,
// f32 value) pairs, k_b = ceil(density * ceil(count/n)), headers not counted; microseconds at
// rateGbit, 0 when rate is 0 or n is 1. Used as the reference for every sparse row.
double sparseFloorBytes(size_t count, int nranks, double density);
double sparseFloorUs(size_t count, int nranks, double density, double rateGbit);

// The title line, then `settings` (settingsLine(), may be ""), then the column names.
std::string header(const BenchOptions& o, int nranks, const std::string& transportNote,
                   const std::string& settings = "");
// "# settings: NAME=VALUE ..." (sorted) for the UCX_* variables and Tessera's own TSR_* settings
// in env, so a result says what it ran with (nccl-tests users read NCCL_* the same way); never
// the launcher's (TSR_RANK, TSR_PEERS, TSR_JOB_SECRET, ...) nor unknown TSR_ names.
std::string settingsLine(const std::map<std::string, std::string>& env);
// "# tcp congestion control (rank 0's host): NAME\n", or "" when unknown: TCP results depend
// on it (bbr's pacing and round-trip probes, docs/performance.md, "TCP send buffer").
std::string congestionControlLine(const std::string& name);
// The kernel's default for new TCP connections (/proc/sys/net/ipv4/tcp_congestion_control),
// "" when it cannot be read.
std::string tcpCongestionControl();
// One row in o.format. A size that failed (r.error) claims no figures: dashes and FAIL in the
// table, then "#   error: ..." (every line of it a comment); in CSV empty figures and the
// error in the last column. CSV fields are quoted as RFC 4180 says.
std::string formatRow(const BenchRow& r, const BenchOptions& o, int nranks);
std::string footer(const std::vector<BenchRow>& rows, const BenchOptions& o, int nranks);
// Rows with a split: "#   split(us) prepare P pack ... total T sent(B) B floor(us) F x_floor X"
// ('#' keeps the csv and peer formats parseable; sent: the row's wire bytes, which the peer
// format has no column for); sparse rows: "#   split(us) select S merge M wire W total T
// nnz Z sent(B) B floor(us) F x_floor X" (topk: "#   sparse nnz Z sent(B) ...");
// "" otherwise.
std::string splitLine(const BenchRow& r, const BenchOptions& o, int nranks);
// Adds "split": {...}, "floor_us" and "x_floor" (the compressed floor) to rows with a split;
// sparse rows get "sparse": {...} (split fields when timed, "nnz") and the sparse floor.
// A size that failed: null figures ("wrong": null) and "error".
std::string jsonLine(const BenchRow& r, const BenchOptions& o, int nranks);
double averageBusbw(const std::vector<BenchRow>& rows, Collective c, int nranks);

}  // namespace tsr::tools::bench
