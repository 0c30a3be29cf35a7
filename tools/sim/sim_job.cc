#include "tools/sim/sim_job.h"

#include <cstdio>

#include "algorithms/marsit/hier_plan.h"
#include "algorithms/marsit/marsit.h"
#include "algorithms/marsit/marsit_plan.h"
#include "tools/sim/spardl_plan.h"
#include "topology/host_map.h"
#include "topology/spardl_schedule.h"
#include "topology/torus_schedule.h"

namespace tsr::sim {

using algorithms::Plan;

namespace {

Result<std::shared_ptr<Plan>> buildOne(const SimJob& job, const JobPlans& out, const algorithms::DenseOptions& dense,
                                       const std::string& gridWhyNot, int rank) {
  const int n = job.ranks;
  const size_t count = job.bytes / dataTypeSize(job.dtype);
  const std::string& a = out.algorithm;
  if (job.collective == "allgather") {
    if (a == "bruck") return algorithms::bruckAllgatherPlan(rank, n, count, job.dtype, dense);
    if (a == "ring") return algorithms::ringAllgatherPlan(rank, n, count, job.dtype, dense);
    return Status(Code::kInternal, "no all-gather plan named '" + a + "'");  // validateJob let it through
  }
  // Marsit's bit ring on the f32 buffer's signs, packed chunk by chunk (kLocal ops) as the
  // runtime's default pack=chunked does.
  if (a == "marsit") return marsit::marsitRingPlan(rank, n, (count + 63) / 64, dense, true);
  if (a == "marsit-2level") {  // the bits of the host averages' row blocks, across hosts
    if (out.grid.empty()) return Status(Code::kNotSupported, gridWhyNot);
    TSR_ASSIGN_OR_RETURN(auto hier, marsit::marsitHierPlans(rank, n, count, DataType::kF32, out.grid, dense, true));
    return hier.bits;
  }
  if (a == "marsit-torus") {  // the same bits over the host grid: a ring per dimension
    if (out.grid.empty()) return Status(Code::kNotSupported, gridWhyNot);
    return algorithms::torusSignMergePlan(rank, n, (count + 63) / 64, out.grid, dense, true);
  }
  if (a == "rabenseifner") return algorithms::rabenseifnerAllreducePlan(rank, n, count, job.dtype, job.op, dense);
  if (a == "doubling") return algorithms::doublingAllreducePlan(rank, n, count, job.dtype, job.op, dense);
  if (a == "torus" || a == "hier") {
    if (out.grid.empty()) return Status(Code::kNotSupported, gridWhyNot);
    return a == "torus" ? algorithms::torusAllreducePlan(rank, n, count, job.dtype, job.op, out.grid, dense)
                        : algorithms::hierAllreducePlan(rank, n, count, job.dtype, job.op, out.grid, dense);
  }
  if (a == "ring") return algorithms::ringAllreducePlan(rank, n, count, job.dtype, job.op, dense);
  return Status(Code::kInternal, "no allreduce plan named '" + a + "'");
}

// SparDL's schedule, built once for the job, then each rank's plan from it.
Result<JobPlans> addSparDL(const SimJob& job, JobPlans out) {
  TSR_ASSIGN_OR_RETURN(topology::TeamSplit split, topology::teamSplit(out.order, job.teams));
  TSR_ASSIGN_OR_RETURN(topology::Schedule schedule, topology::sparRSagAllreduce(split));
  out.algorithm = "spardl";
  out.argumentHeaders = false;
  out.reducesSelect = true;
  for (int r = 0; r < job.ranks; ++r) {
    TSR_ASSIGN_OR_RETURN(auto plan, spardlPlan(schedule, r, job.bytes / sizeof(float), job.density));
    out.plans.push_back(std::move(plan));
  }
  return out;
}

// Bytes a Marsit step's passes outside its plans read and write, per element (f32 and the sign
// bits): the flat finish is kernels::signFinish (work, bits -> g, c: 12) and
// kernels::momentumHandOff (g, M, c -> g, M, carry: 24); two-level prepares x = g + r (12) and
// copies it into the host average's buffer (8), then decompresses every bit into g (4) and runs
// signFinish on its row block.
constexpr double kFlatFinishBytes = 36, kTwoLevelPrepareBytes = 20, kTwoLevelDecompressBytes = 4, kSignFinishBytes = 12;

// Marsit's step around its bit plan (marsit_state.cc, marsit_step.cc, marsit_hier_step.cc) with
// the runtime's defaults (flat: scale_block 4096, momentum 0.9; two-level: intra=none): once the
// packing is done, the allreduce of the scales (marsit::scalePlan) beside the bits; then the finish. The
// two-level step first averages the vector over the host's ranks (its row reduce-scatter).
Result<JobPlans> addMarsitStep(const SimJob& job, JobPlans out, const algorithms::DenseOptions& dense) {
  const size_t count = job.bytes / sizeof(float);
  const bool twoLevel = out.algorithm == "marsit-2level";
  const size_t scalars = twoLevel ? 2 : marsit::flatScalarCount(count, marsit::Params{}.scaleBlock);
  for (int r = 0; r < job.ranks; ++r) {
    TSR_ASSIGN_OR_RETURN(auto plan, marsit::scalePlan(r, job.ranks, scalars, dense));
    out.beside.push_back(std::move(plan));
    if (!twoLevel) continue;
    TSR_ASSIGN_OR_RETURN(auto hier,
                         marsit::marsitHierPlans(r, job.ranks, count, DataType::kF32, out.grid, dense, true));
    out.before.push_back(hier.rowReduceScatter);
  }
  const double n = static_cast<double>(count);
  if (twoLevel) {
    out.prepareBytes = n * kTwoLevelPrepareBytes;
    out.finishBytes = n * (kTwoLevelDecompressBytes + kSignFinishBytes / static_cast<double>(out.grid[0].size()));
  } else {
    out.finishBytes = n * kFlatFinishBytes;
  }
  return out;
}

bool isOneOf(const std::string& value, const std::string& choices) {
  return ("|" + choices + "|").find("|" + value + "|") != std::string::npos;
}

}  // namespace

std::string simAlgorithms(const std::string& collective) {
  if (collective == "allreduce")
    return "auto|ring|rabenseifner|doubling|torus|hier|marsit|marsit-torus|marsit-2level|spardl";
  if (collective == "allgather") return "auto|ring|bruck";
  return "";
}

Status validateJob(const SimJob& job) {
  const std::string algos = simAlgorithms(job.collective);
  if (algos.empty())
    return Status(Code::kInvalidArgument,
                  "--collective " + job.collective + ": accepted values are allreduce|allgather");
  if (!isOneOf(job.algorithm, algos))
    return Status(Code::kInvalidArgument,
                  "--algo " + job.algorithm + ": accepted values for --collective " + job.collective + " are " + algos);
  if (!isOneOf(job.arrival, "auto|on|off"))
    return Status(Code::kInvalidArgument, "--arrival " + job.arrival + ": accepted values are auto|on|off");
  auto inRange = [](const char* option, size_t bytes, size_t lo, size_t hi, const char* setting) {
    if (bytes >= lo && bytes <= hi) return Status::ok();
    return Status(Code::kInvalidArgument, std::string(option) + " " + std::to_string(bytes) +
                                              " B: accepted values are " + std::to_string(lo) + ".." +
                                              std::to_string(hi) + " B (" + setting + ")");
  };
  TSR_RETURN_IF_ERROR(inRange("--chunk", job.chunkBytes, kMinChunkBytes, kMaxChunkBytes, "TSR_CHUNK_BYTES"));
  TSR_RETURN_IF_ERROR(
      inRange("--min-message", job.minMessageBytes, kMinMessageFloor, kMinMessageCeiling, "TSR_MIN_MESSAGE_BYTES"));
  const std::string dtype = dataTypeName(job.dtype), op = reduceOpName(job.op);
  if (isBitwiseOp(job.op) && isFloatType(job.dtype))
    return Status(Code::kInvalidArgument,
                  "--op " + op + " is bitwise: it takes --dtype i32 or i64, not --dtype " + dtype);
  // Marsit's plans carry a sign bit per f32 element (its step counts elements as bytes / 4) and
  // SparDL's bags f32 values: another dtype would model a step of another size.
  const bool marsit = job.algorithm.rfind("marsit", 0) == 0, spardl = job.algorithm == "spardl";
  if ((marsit || spardl) && job.dtype != DataType::kF32)
    return Status(Code::kInvalidArgument, "--algo " + job.algorithm + " takes --dtype f32 only, not --dtype " + dtype);
  if (marsit && job.op != ReduceOp::kSum && job.op != ReduceOp::kAvg)
    return Status(Code::kInvalidArgument,
                  "--algo " + job.algorithm + " takes --op sum or avg (Marsit estimates the average), not --op " + op);
  if (spardl && job.op != ReduceOp::kSum)
    return Status(Code::kInvalidArgument, "--algo spardl takes --op sum only, not --op " + op);
  if (spardl && !(job.density > 0 && job.density <= 1)) {
    char density[32];
    std::snprintf(density, sizeof density, "%g", job.density);
    return Status(Code::kInvalidArgument, std::string("--density ") + density + ": accepted values are in (0, 1]");
  }
  return Status::ok();
}

Result<JobPlans> buildJobPlans(const SimJob& job) {
  TSR_RETURN_IF_ERROR(validateJob(job));
  if (job.ranks < 1 || job.ranksPerHost < 1 || job.ranks % job.ranksPerHost != 0)
    return Status(Code::kInvalidArgument, "ranks (" + std::to_string(job.ranks) +
                                              ") must be a positive multiple of ranks per host (" +
                                              std::to_string(job.ranksPerHost) + ")");
  JobPlans out;
  std::vector<topology::RankPlacement> placements;
  for (int r = 0; r < job.ranks; ++r) {
    topology::RankPlacement p;
    p.rank = r;
    p.hostname = "host" + std::to_string(r / job.ranksPerHost);
    placements.push_back(p);
  }
  TSR_ASSIGN_OR_RETURN(topology::HostMap hostMap, topology::buildHostMap(placements));
  out.order = topology::ringOrder(hostMap);
  out.hosts = static_cast<int>(hostMap.hosts.size());
  out.hostOfRank = hostMap.hostOfRank;
  std::string gridWhyNot;
  auto shape = topology::torusShape(hostMap);
  auto layout =
      shape.isOk() ? topology::torusLayout(hostMap, shape.value()) : Result<topology::TorusLayout>(shape.status());
  if (layout.isOk())
    out.grid = layout.value().grid;
  else
    gridWhyNot = layout.status().message();

  algorithms::DenseOptions dense;
  dense.chunkBytes = job.chunkBytes;
  dense.window = job.window;
  dense.minMessageBytes = job.minMessageBytes;
  dense.order = out.order;
  dense.reduceOnArrival = job.arrival == "on" || (job.arrival == "auto" && out.hosts == job.ranks);

  if (job.algorithm == "spardl") return addSparDL(job, std::move(out));

  // The selector's order: the named algorithm, else the cost model's ranking; an algorithm
  // that cannot serve the job (NotSupported) passes to the next, as in the runtime.
  std::vector<std::string> names;
  if (job.algorithm != "auto") names.push_back(job.algorithm);
  algorithms::JobShape js{job.ranks, out.hosts, job.ranksPerHost, layout.isOk() && shape.value().hostAxis};
  auto ranked = job.collective == "allgather" ? algorithms::rankAllgather(job.bytes, js, job.links)
                                              : algorithms::rankAllreduce(job.bytes, js, job.links);
  // Marsit has no dense stand-in: like the runtime, a job its plan cannot serve is refused.
  const bool compressed = job.algorithm.rfind("marsit", 0) == 0;
  for (const auto& c : ranked)
    if (!compressed && c.algorithm != job.algorithm) names.push_back(c.algorithm);
  Status last(Code::kInternal, "no algorithm");
  for (const std::string& name : names) {
    out.algorithm = name;
    out.plans.clear();
    Status failed;
    for (int r = 0; r < job.ranks && failed.isOk(); ++r) {
      auto plan = buildOne(job, out, dense, gridWhyNot, r);
      if (plan.isOk())
        out.plans.push_back(plan.take());
      else
        failed = plan.status();
    }
    if (failed.isOk()) return compressed ? addMarsitStep(job, std::move(out), dense) : out;
    if (failed.code() != Code::kNotSupported) return failed;
    out.refused.push_back(name + ": " + failed.message());
    last = failed;
  }
  return last;
}

namespace {
template <typename F>
void forEachSend(const JobPlans& plans, F f) {
  for (const auto* byRank : {&plans.before, &plans.plans, &plans.beside})
    for (const auto& plan : *byRank)
      for (const auto& op : plan->ops)
        if (op.kind == algorithms::OpKind::kSend) f(op.count * dataTypeSize(plan->dtype));
}
}  // namespace

uint64_t wireBytes(const JobPlans& plans) {
  uint64_t total = 0;
  forEachSend(plans, [&](size_t bytes) { total += bytes; });
  return total;
}

uint64_t messageCount(const JobPlans& plans) {
  uint64_t total = 0;
  forEachSend(plans, [&](size_t) { ++total; });
  return total;
}

double busFactor(const std::string& collective, int ranks) {
  if (ranks < 2) return 0;
  double f = static_cast<double>(ranks - 1) / ranks;
  return collective == "allgather" ? f : 2 * f;
}

double algoBytes(const SimJob& job) {
  return job.collective == "allgather" ? static_cast<double>(job.bytes) * job.ranks : static_cast<double>(job.bytes);
}

}  // namespace tsr::sim
