// tsr-gpu-check: Tessera on cudaMalloc'd buffers against the same calls on host memory, bit for
// bit, as one rank of a job under tsrun (every rank on the machine's one GPU):
//   * every dense collective (allreduce, reduce-scatter, allgather, broadcast, barrier), every
//     dtype and op, three counts, with tsr_comm_set_memory_type(TSR_MEM_CUDA);
//   * every device tensor (memory=cuda): Marsit ring, torus and two-level (intra=none|fp16),
//     compressed with every compressor (flat; two-level with two of them), SparDL (flat and
//     with teams), a few steps each: result and residual equal to a host tensor's.
// Without a CUDA device the host halves still run and each device half is reported SKIP
// (exit 0): the dry run of tools/gpu/device_check.sh. Exit 1 on any failure.
//
// usage: tsrun -np N tsr-gpu-check [--hosts H] [--count C] [--steps S] [--only dense|tensors]
//   --hosts H: the ranks act as H hosts of N/H ranks (TSR_TEST_HOST_ID), for the torus and the
//   two-level tensors. C: the largest dense count and the tensors' size (default 262147).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "base/half.h"
#include "tessera/tessera.h"
#include "tools/gpu/gpu_check.h"

using namespace tsr::gpucheck;

namespace {

const char* dtypeName(tsr_dtype_t t) {
  static const char* names[] = {"f32", "f64", "f16", "bf16", "i32", "i64"};
  return names[t];
}
size_t dtypeSize(tsr_dtype_t t) {
  return t == TSR_FLOAT64 || t == TSR_INT64 ? 8 : t == TSR_INT32 || t == TSR_FLOAT32 ? 4 : 2;
}
const char* opName(tsr_op_t op) {
  static const char* names[] = {"sum", "avg", "min", "max", "prod"};
  return names[op];
}

// Exactly representable in every dtype (quarters up to 32; prod: 1 or 2, so 4 ranks stay small).
double value(int rank, size_t j, tsr_op_t op, bool integer) {
  if (op == TSR_PROD) return 1.0 + static_cast<double>((j + rank) % 2);
  double v = static_cast<double>(static_cast<long>((j * 7 + rank * 13) % 61) - 30);
  return integer ? v : v * 0.25 + 0.5 * ((j + rank) % 3 == 0);
}

void fill(std::vector<char>& buf, size_t count, tsr_dtype_t t, int rank, tsr_op_t op, size_t first = 0) {
  for (size_t j = 0; j < count; ++j) {
    double v = value(rank, first + j, op, t == TSR_INT32 || t == TSR_INT64);
    char* p = buf.data() + j * dtypeSize(t);
    switch (t) {
      case TSR_FLOAT32: {
        float f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
        break;
      }
      case TSR_FLOAT64:
        std::memcpy(p, &v, 8);
        break;
      case TSR_FLOAT16: {
        uint16_t h = tsr::floatToF16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
      case TSR_BFLOAT16: {
        uint16_t h = tsr::floatToBf16(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
      case TSR_INT32: {
        int32_t i = static_cast<int32_t>(v);
        std::memcpy(p, &i, 4);
        break;
      }
      default: {
        int64_t i = static_cast<int64_t>(v);
        std::memcpy(p, &i, 8);
        break;
      }
    }
  }
}

// One dense collective on host buffers, then on device buffers; outputs compared byte for byte.
// run(send, recv) posts the collective (blocking); the device run is non-blocking + wait.
struct DenseCase {
  std::string what;
  std::vector<char> send;
  size_t recvBytes;
  std::function<tsr_status_t(const void*, void*, tsr_request_t*)> run;
};

void runDense(tsr_comm_t comm, Tally& tally, bool device, const DenseCase& c) {
  std::vector<char> hostOut(c.recvBytes, 0x5a);
  if (c.run(c.send.data(), hostOut.data(), nullptr) != TSR_OK)
    return tally.fail(c.what + " on host: " + tsr_last_error());
  if (!device) return tally.skip(c.what + " on device (host half ran)");
  if (tsr_comm_set_memory_type(comm, TSR_MEM_CUDA) != TSR_OK) return tally.fail(c.what + ": " + tsr_last_error());
  DeviceBuffer in(c.send.size()), out(c.recvBytes);
  in.fromHost(c.send.data());
  std::vector<char> init(c.recvBytes, 0x5a);
  out.fromHost(init.data());
  tsr_request_t req = nullptr;
  tsr_status_t st = c.run(in.p, out.p, &req);
  if (st == TSR_OK) st = tsr_wait(req);
  std::string err = st == TSR_OK ? "" : tsr_last_error();
  if (req) tsr_request_free(req);
  tsr_comm_set_memory_type(comm, TSR_MEM_HOST);
  if (st != TSR_OK) return tally.fail(c.what + " on device: " + err);
  std::vector<char> got = out.toHost(), input = in.toHost();
  if (got != hostOut) return tally.fail(c.what + ": device result differs from the host's");
  if (input != c.send) return tally.fail(c.what + ": the device input was written");
  tally.pass(c.what);
}

void denseCases(tsr_comm_t comm, Tally& tally, bool device, int rank, int size, size_t big) {
  const tsr_dtype_t types[] = {TSR_FLOAT32, TSR_FLOAT64, TSR_FLOAT16, TSR_BFLOAT16, TSR_INT32, TSR_INT64};
  const tsr_op_t ops[] = {TSR_SUM, TSR_AVG, TSR_MIN, TSR_MAX, TSR_PROD};
  for (size_t count : {size_t{1}, size_t{1001}, big}) {
    for (tsr_dtype_t t : types) {
      const size_t es = dtypeSize(t);
      const std::string tag = std::string(dtypeName(t)) + " count " + std::to_string(count);
      for (tsr_op_t op : ops) {
        DenseCase ar{
            "allreduce " + tag + " " + opName(op), std::vector<char>(count * es), count * es,
            [=](const void* s, void* r, tsr_request_t* q) { return tsr_allreduce(comm, s, r, count, t, op, q); }};
        fill(ar.send, count, t, rank, op);
        runDense(comm, tally, device, ar);
        DenseCase rs{
            "reduce_scatter " + tag + " " + opName(op), std::vector<char>(count * size * es), count * es,
            [=](const void* s, void* r, tsr_request_t* q) { return tsr_reduce_scatter(comm, s, r, count, t, op, q); }};
        fill(rs.send, count * size, t, rank, op);
        runDense(comm, tally, device, rs);
      }
      DenseCase ag{"allgather " + tag, std::vector<char>(count * es), count * size * es,
                   [=](const void* s, void* r, tsr_request_t* q) { return tsr_allgather(comm, s, r, count, t, q); }};
      fill(ag.send, count, t, rank, TSR_SUM);
      runDense(comm, tally, device, ag);
      DenseCase bc{
          "broadcast " + tag + " root " + std::to_string(size - 1), std::vector<char>(count * es), count * es,
          [=](const void* s, void* r, tsr_request_t* q) { return tsr_broadcast(comm, s, r, count, t, size - 1, q); }};
      fill(bc.send, count, t, rank, TSR_SUM);
      runDense(comm, tally, device, bc);
    }
  }
  // In place on the device (recv == send) and a barrier with the CUDA setting on.
  if (!device) return tally.skip("allreduce f32 in place and barrier on device");
  std::vector<char> h(big * 4);
  fill(h, big, TSR_FLOAT32, rank, TSR_SUM);
  std::vector<char> want = h;
  if (tsr_allreduce(comm, want.data(), want.data(), big, TSR_FLOAT32, TSR_SUM, nullptr) != TSR_OK)
    return tally.fail(std::string("allreduce in place on host: ") + tsr_last_error());
  DeviceBuffer d(big * 4);
  d.fromHost(h.data());
  tsr_comm_set_memory_type(comm, TSR_MEM_CUDA);
  tsr_status_t st = tsr_allreduce(comm, d.p, d.p, big, TSR_FLOAT32, TSR_SUM, nullptr);
  if (st == TSR_OK) st = tsr_barrier(comm, nullptr);
  std::string err = st == TSR_OK ? "" : tsr_last_error();
  tsr_comm_set_memory_type(comm, TSR_MEM_HOST);
  if (st != TSR_OK) return tally.fail("allreduce f32 in place + barrier on device: " + err);
  if (d.toHost() != want) return tally.fail("allreduce f32 in place on device differs from the host's");
  tally.pass("allreduce f32 in place and barrier on device");
}

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--hosts H] [--count C] [--steps S] [--only dense|tensors]\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int hosts = 1, steps = 4;
  size_t count = 262147;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--hosts")
      hosts = std::atoi(v.c_str());
    else if (a == "--count")
      count = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--steps")
      steps = std::atoi(v.c_str());
    else if (a == "--only" && (v == "dense" || v == "tensors"))
      only = v;
    else
      return usage(argv[0]);
  }
  if (argc % 2 == 0 || hosts < 1 || count < 2 || steps < 1) return usage(argv[0]);
  const char* rs = std::getenv("TSR_RANK");
  const char* ns = std::getenv("TSR_WORLD_SIZE");
  const int envRank = rs ? std::atoi(rs) : 0, envSize = ns ? std::atoi(ns) : 1;
  if (envSize % hosts != 0) {
    std::fprintf(stderr, "--hosts %d does not divide %d ranks\n", hosts, envSize);
    return 2;
  }
  int devices = 0;
  cudaError_t ce = cudaGetDeviceCount(&devices);
  const bool device = ce == cudaSuccess && devices > 0;
  std::string deviceName =
      "none (" + (ce == cudaSuccess ? std::string("cudaGetDeviceCount found 0") : cudaText(ce)) + ")";
  if (device) {
    cudaSetDevice(0);
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) deviceName = prop.name;
  }
  std::string hostId = "gpu-check-host-" + std::to_string(envRank / (envSize / hosts));
  std::vector<tsr_param_t> params;
  if (hosts > 1) params.push_back({"test_host_id", hostId.c_str()});
  tsr_comm_t comm = nullptr;
  if (tsr_comm_init_config(&comm, params.data(), params.size()) != TSR_OK) {
    std::fprintf(stderr, "tsr_comm_init_config: %s\n", tsr_last_error());
    return 1;
  }
  int rank = 0, size = 1;
  tsr_comm_rank(comm, &rank);
  tsr_comm_size(comm, &size);
  Tally tally;
  tally.rank = rank;
  if (rank == 0)
    std::printf("gpu-check: %d ranks as %d host(s), device: %s, count %zu, %d steps\n", size, hosts, deviceName.c_str(),
                count, steps);
  if (!device) {
    // The refusal must name the reason (a dry run checks the message, not the GPU path).
    if (tsr_comm_set_memory_type(comm, TSR_MEM_CUDA) == TSR_OK)
      tally.fail("TSR_MEM_CUDA accepted without a device");
    else if (rank == 0)
      std::printf("no CUDA device: device halves skipped (%s)\n", tsr_last_error());
  }
  if (only != "tensors") denseCases(comm, tally, device, rank, size, count);
  if (only != "dense") {
    const bool grid = hosts >= 2 && size / hosts >= 2;
    for (const TensorConfig& c : tensorConfigs(size)) {
      if (c.needsHosts && !grid)
        tally.skip(c.label + ": needs 2+ hosts of 2+ ranks (--hosts)");
      else
        tensorCase(comm, tally, device, rank, c, count, steps);
    }
  }
  // Every rank's counts, so rank 0's summary covers the job.
  int64_t counts[3] = {tally.passed, tally.failed, tally.skipped};
  if (tsr_allreduce(comm, counts, counts, 3, TSR_INT64, TSR_SUM, nullptr) != TSR_OK) {
    std::fprintf(stderr, "summing the counts: %s\n", tsr_last_error());
    return 1;
  }
  if (rank == 0)
    std::printf("gpu-check: %lld passed, %lld failed, %lld skipped (case x rank)\n", static_cast<long long>(counts[0]),
                static_cast<long long>(counts[1]), static_cast<long long>(counts[2]));
  tsr_comm_destroy(comm);
  return counts[1] == 0 ? 0 : 1;
}
