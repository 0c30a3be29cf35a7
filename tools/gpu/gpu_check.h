// tsr-gpu-check's pieces (gpu_check.cc: main and the dense collectives; gpu_tensor_cases.cc:
// the device tensors): the tally of cases and a device buffer.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "tessera/tessera.h"

namespace tsr::gpucheck {

struct Tally {
  int rank = 0;
  long passed = 0, failed = 0, skipped = 0;
  void pass(const std::string& what) {
    ++passed;
    if (rank == 0) std::printf("PASS %s\n", what.c_str());
  }
  void fail(const std::string& what) {
    ++failed;
    std::printf("FAIL rank %d: %s\n", rank, what.c_str());
  }
  void skip(const std::string& what) {
    ++skipped;
    if (rank == 0) std::printf("SKIP %s\n", what.c_str());
  }
};

inline std::string cudaText(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

// A device buffer holding a copy of host bytes; copied back with toHost.
struct DeviceBuffer {
  void* p = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) {
    cudaError_t e = cudaMalloc(&p, n ? n : 1);
    if (e != cudaSuccess) {
      std::fprintf(stderr, "cudaMalloc(%zu): %s\n", n, cudaText(e).c_str());
      std::exit(1);
    }
  }
  ~DeviceBuffer() { cudaFree(p); }
  void fromHost(const void* h) { cudaMemcpy(p, h, bytes, cudaMemcpyHostToDevice); }
  std::vector<char> toHost() const {
    std::vector<char> h(bytes);
    cudaMemcpy(h.data(), p, bytes, cudaMemcpyDeviceToHost);
    return h;
  }
};

// One tensor algorithm's parameters, as tsr_tensor_create takes them.
struct TensorConfig {
  std::string label;
  std::vector<std::pair<std::string, std::string>> params;
  bool needsHosts = false;  // two or more hosts of two or more ranks
};

// Every device tensor configuration the check runs on `size` ranks.
std::vector<TensorConfig> tensorConfigs(int size);
// A few steps of one configuration on a host tensor and a memory=cuda one (device), results
// and residuals compared bit for bit; without a device, the refusal of memory=cuda checked.
void tensorCase(tsr_comm_t comm, Tally& tally, bool device, int rank, const TensorConfig& c, size_t count, int steps);

}  // namespace tsr::gpucheck
