// tsr-gpu-check's device tensors (gpu_check.h): every algorithm on a host tensor and on a
// memory=cuda one, a few steps each, results and residuals equal bit for bit.
#include <cmath>
#include <cstring>

#include "tools/gpu/gpu_check.h"

namespace tsr::gpucheck {

std::vector<TensorConfig> tensorConfigs(int size) {
  std::vector<TensorConfig> v{
      {"marsit ring", {{"algorithm", "marsit"}, {"topology", "ring"}, {"full_precision_every", "3"}}},
      {"marsit torus", {{"algorithm", "marsit"}, {"topology", "torus"}, {"full_precision_every", "3"}}, true},
      {"marsit two-level intra=none", {{"algorithm", "marsit"}, {"intra", "none"}}, true},
      {"marsit two-level intra=fp16", {{"algorithm", "marsit"}, {"intra", "fp16"}}, true},
      {"compressed none", {{"algorithm", "compressed"}, {"compressor", "none"}}},
      {"compressed fp16", {{"algorithm", "compressed"}, {"compressor", "fp16"}}},
      {"compressed bf16", {{"algorithm", "compressed"}, {"compressor", "bf16"}}},
      {"compressed topk", {{"algorithm", "compressed"}, {"compressor", "topk"}, {"k", "0.01"}}},
      {"compressed topk ef=none", {{"algorithm", "compressed"}, {"compressor", "topk"}, {"k", "0.01"}, {"ef", "none"}}},
      {"compressed topk nesterov",
       {{"algorithm", "compressed"}, {"compressor", "topk"}, {"k", "0.01"}, {"momentum", "nesterov"}}},
      {"compressed randomk", {{"algorithm", "compressed"}, {"compressor", "randomk"}, {"k", "0.01"}, {"seed", "7"}}},
      {"compressed onebit", {{"algorithm", "compressed"}, {"compressor", "onebit"}, {"scaling", "true"}}},
      // The preset: a scale per 4096 elements and the momentum hand-off.
      {"onebit preset", {{"algorithm", "onebit"}}},
      {"compressed dithering max", {{"algorithm", "compressed"}, {"compressor", "dithering"}, {"k", "15"}}},
      {"compressed dithering l2",
       {{"algorithm", "compressed"}, {"compressor", "dithering"}, {"k", "15"}, {"dithering_normalize", "l2"}}},
      {"compressed two-level fp16 topk",
       {{"algorithm", "compressed"}, {"intra", "fp16"}, {"compressor", "topk"}, {"k", "0.01"}},
       true},
      {"compressed two-level none onebit",
       {{"algorithm", "compressed"}, {"intra", "none"}, {"compressor", "onebit"}},
       true},
      {"spardl", {{"algorithm", "spardl"}, {"density", "0.01"}}},
  };
  if (size % 2 == 0 && size >= 4)
    v.push_back({"spardl teams=2", {{"algorithm", "spardl"}, {"density", "0.01"}, {"teams", "2"}}});
  return v;
}

namespace {

size_t differing(const float* a, const float* b, size_t n, double* maxDiff) {
  size_t bad = 0;
  *maxDiff = 0;
  for (size_t j = 0; j < n; ++j)
    if (std::memcmp(a + j, b + j, 4) != 0) {
      ++bad;
      *maxDiff = std::fmax(*maxDiff, std::fabs(static_cast<double>(a[j]) - b[j]));
    }
  return bad;
}

}  // namespace

void tensorCase(tsr_comm_t comm, Tally& tally, bool device, int rank, const TensorConfig& c, size_t count, int steps) {
  static int serial = 0;
  const std::string id = std::to_string(serial++);
  std::vector<tsr_param_t> hp, dp;
  for (const auto& [k, v] : c.params) hp.push_back({k.c_str(), v.c_str()});
  dp = hp;
  dp.push_back({"memory", "cuda"});
  tsr_tensor_t h = nullptr, d = nullptr;
  if (tsr_tensor_create(comm, ("h" + id).c_str(), count, TSR_FLOAT32, hp.data(), hp.size(), &h) != TSR_OK)
    return tally.fail(c.label + ": host tensor: " + tsr_last_error());
  if (!device) {
    // Without a device memory=cuda is refused, naming the tensor (checked); the host tensor runs.
    if (tsr_tensor_create(comm, ("d" + id).c_str(), count, TSR_FLOAT32, dp.data(), dp.size(), &d) !=
            TSR_ERR_NOT_SUPPORTED ||
        std::strstr(tsr_last_error(), ("tensor d" + id).c_str()) == nullptr) {
      tsr_tensor_destroy(d);
      tsr_tensor_destroy(h);
      return tally.fail(c.label + ": memory=cuda without a device was not refused with the reason");
    }
    std::vector<float> g(count);
    for (int step = 0; step < steps; ++step) {
      for (size_t j = 0; j < count; ++j) g[j] = std::sin(0.001f * j * (rank + 1) + step) * (1 + j % 7);
      if (tsr_tensor_allreduce(h, g.data(), nullptr) != TSR_OK) {
        tally.fail(c.label + " host step: " + tsr_last_error());
        break;
      }
    }
    tsr_tensor_destroy(h);
    return tally.skip(c.label + " on device (host tensor ran " + std::to_string(steps) + " steps)");
  }
  if (tsr_tensor_create(comm, ("d" + id).c_str(), count, TSR_FLOAT32, dp.data(), dp.size(), &d) != TSR_OK) {
    tally.fail(c.label + ": memory=cuda tensor: " + tsr_last_error());
    tsr_tensor_destroy(h);
    return;
  }
  const char* name = "";
  tsr_tensor_info(d, nullptr, &name);
  const std::string algo = name;  // the string lives only as long as the tensor
  DeviceBuffer gd(count * 4);
  std::vector<float> g(count), back(count), rh(count), rd(count);
  std::string bad;
  for (int step = 0; step < steps && bad.empty(); ++step) {
    for (size_t j = 0; j < count; ++j) g[j] = std::sin(0.001f * j * (rank + 1) + step) * (1 + j % 7);
    gd.fromHost(g.data());
    tsr_request_t req = nullptr;
    if (tsr_tensor_allreduce(h, g.data(), nullptr) != TSR_OK) bad = std::string("host step: ") + tsr_last_error();
    tsr_status_t st = tsr_tensor_allreduce(d, gd.p, &req);
    if (st == TSR_OK) st = tsr_wait(req);
    if (st != TSR_OK && bad.empty()) bad = std::string("device step: ") + tsr_last_error();
    if (req) tsr_request_free(req);
    if (!bad.empty()) break;
    cudaMemcpy(back.data(), gd.p, count * 4, cudaMemcpyDeviceToHost);
    double maxDiff = 0;
    if (size_t n = differing(g.data(), back.data(), count, &maxDiff))
      bad = "step " + std::to_string(step) + ": " + std::to_string(n) + " result elements differ (max " +
            std::to_string(maxDiff) + ")";
    else if (tsr_tensor_residual(h, rh.data()) != TSR_OK || tsr_tensor_residual(d, rd.data()) != TSR_OK)
      bad = std::string("residual: ") + tsr_last_error();
    else if (size_t m = differing(rh.data(), rd.data(), count, &maxDiff))
      bad = "step " + std::to_string(step) + ": " + std::to_string(m) + " residual elements differ (max " +
            std::to_string(maxDiff) + ")";
  }
  tsr_tensor_destroy(h);
  tsr_tensor_destroy(d);
  std::string what = c.label + " (" + algo + "), " + std::to_string(steps) + " steps of " + std::to_string(count);
  if (bad.empty())
    tally.pass(what);
  else
    tally.fail(what + ": " + bad);
}

}  // namespace tsr::gpucheck
