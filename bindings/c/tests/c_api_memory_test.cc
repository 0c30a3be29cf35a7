// The C API's memory types as a C user sees them, ranks as threads over real UCX: host memory
// works; CUDA memory (the communicator's setting, the calling thread's own, a tensor's
// memory=cuda) needs a CUDA device and is refused with the reason where there is none; a value
// outside the enum is named. The GPU device check runs these where a device is
// (docs/gpu.md, gtest-c_api-memory).
#include <gtest/gtest.h>

#include <string>

#include "bindings/c/tests/c_ranks.h"
#include "tessera/tessera.h"

using tsr::ctest::lastError;
using tsr::ctest::runCRanks;

namespace {
// The memory-type seam: host buffers work; CUDA buffers need a CUDA device (dense
// collectives stage them through pinned host memory): without one they are refused with the
// reason and the setting stays host; a value outside the enum is named.
TEST(CApi, MemoryTypeHostWorksCudaIsRefusedWithTheReason) {
  runCRanks(2, [](tsr_comm_t comm, int r) {
    ASSERT_EQ(tsr_comm_set_memory_type(comm, TSR_MEM_HOST), TSR_OK) << lastError();
    const tsr_status_t cuda = tsr_comm_set_memory_type(comm, TSR_MEM_CUDA);
    if (cuda == TSR_OK) {
      // A machine with a GPU (tools/gpu/device_check.sh): the setting is taken; back to host.
      ASSERT_EQ(tsr_comm_set_memory_type(comm, TSR_MEM_HOST), TSR_OK) << lastError();
    } else {
      EXPECT_EQ(cuda, TSR_ERR_NOT_SUPPORTED) << lastError();
      EXPECT_NE(lastError().find("need a CUDA device"), std::string::npos) << lastError();
      EXPECT_NE(lastError().find("memory=cuda"), std::string::npos) << lastError();
    }
    EXPECT_EQ(tsr_comm_set_memory_type(comm, static_cast<tsr_memory_t>(7)), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("memory type 7"), std::string::npos) << lastError();
    // A stream is for CUDA buffers only: host collectives go on as before.
    int notAStream = 0;
    ASSERT_EQ(tsr_comm_set_stream(comm, &notAStream), TSR_OK) << lastError();
    std::vector<float> x(1000, 1.0f + r);
    ASSERT_EQ(tsr_allreduce(comm, x.data(), x.data(), x.size(), TSR_FLOAT32, TSR_SUM, nullptr), TSR_OK) << lastError();
    EXPECT_EQ(x[999], 3.0f);
  });
  EXPECT_EQ(tsr_comm_set_memory_type(nullptr, TSR_MEM_HOST), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(tsr_comm_set_stream(nullptr, nullptr), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(tsr_comm_set_thread_buffers(nullptr, TSR_MEM_HOST, nullptr), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(tsr_comm_clear_thread_buffers(nullptr), TSR_ERR_INVALID_ARGUMENT);
}

// The calling thread's own memory type: checked as the communicator's (a bad value named,
// CUDA refused without a device, nothing set then); host for this thread while the
// communicator says host too goes on as before; cleared, the communicator's holds again.
TEST(CApi, ThreadBuffersAreCheckedAndClearedPerThread) {
  runCRanks(2, [](tsr_comm_t comm, int r) {
    EXPECT_EQ(tsr_comm_set_thread_buffers(comm, static_cast<tsr_memory_t>(5), nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("tsr_comm_set_thread_buffers: memory type 5"), std::string::npos) << lastError();
    const tsr_status_t cuda = tsr_comm_set_thread_buffers(comm, TSR_MEM_CUDA, nullptr);
    if (cuda == TSR_OK) {  // a machine with a GPU
      ASSERT_EQ(tsr_comm_clear_thread_buffers(comm), TSR_OK);
    } else {
      EXPECT_EQ(cuda, TSR_ERR_NOT_SUPPORTED) << lastError();
      EXPECT_NE(lastError().find("tsr_comm_set_thread_buffers: rank " + std::to_string(r)), std::string::npos)
          << lastError();
    }
    ASSERT_EQ(tsr_comm_set_thread_buffers(comm, TSR_MEM_HOST, nullptr), TSR_OK) << lastError();
    std::vector<float> x(100, 1.0f + r);
    ASSERT_EQ(tsr_allreduce(comm, x.data(), x.data(), x.size(), TSR_FLOAT32, TSR_SUM, nullptr), TSR_OK) << lastError();
    EXPECT_EQ(x[99], 3.0f);
    ASSERT_EQ(tsr_comm_clear_thread_buffers(comm), TSR_OK);
    ASSERT_EQ(tsr_comm_clear_thread_buffers(comm), TSR_OK);  // nothing set: nothing to do
  });
}

// memory=host|cuda on tensors: host works as before; cuda without a device (here) or without
// CUDA in the build fails with NOT_SUPPORTED naming the tensor and the reason; dense refuses
// cuda; a bad value is named. Nothing crashes.
TEST(CApi, TensorMemoryParameter) {
  runCRanks(2, [](tsr_comm_t comm, int r) {
    tsr_tensor_t t = nullptr;
    tsr_param_t bad[] = {{"algorithm", "marsit"}, {"memory", "gpu"}};
    EXPECT_EQ(tsr_tensor_create(comm, "w", 64, TSR_FLOAT32, bad, 2, &t), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("memory=gpu is not accepted (host or cuda)"), std::string::npos) << lastError();
    tsr_param_t dense[] = {{"memory", "cuda"}};
    EXPECT_EQ(tsr_tensor_create(comm, "b", 64, TSR_FLOAT32, dense, 1, &t), TSR_ERR_NOT_SUPPORTED);
    EXPECT_NE(lastError().find("tensor b: memory=cuda is not offered with algorithm=dense"), std::string::npos)
        << lastError();
    for (const char* algorithm : {"marsit", "compressed", "spardl"}) {
      tsr_param_t cuda[] = {{"algorithm", algorithm}, {"memory", "cuda"}, {"compressor", "onebit"}};
      tsr_status_t st = tsr_tensor_create(comm, "fc1.weight", 64, TSR_FLOAT32, cuda,
                                          std::string(algorithm) == "compressed" ? 3 : 2, &t);
      if (st == TSR_OK) {  // a machine with a GPU: the device test covers it
        tsr_tensor_destroy(t);
        continue;
      }
      EXPECT_EQ(st, TSR_ERR_NOT_SUPPORTED) << algorithm << ": " << lastError();
      EXPECT_NE(lastError().find("tensor fc1.weight: memory=cuda is not possible here"), std::string::npos)
          << lastError();
#ifdef TSR_HAVE_CUDA_COPIER
      EXPECT_NE(lastError().find("no usable CUDA device"), std::string::npos) << lastError();
#else
      EXPECT_NE(lastError().find("built without CUDA"), std::string::npos) << lastError();
#endif
      EXPECT_EQ(t, nullptr);
    }
    tsr_param_t host[] = {{"algorithm", "marsit"}, {"memory", "host"}};
    ASSERT_EQ(tsr_tensor_create(comm, "w", 64, TSR_FLOAT32, host, 2, &t), TSR_OK) << lastError();
    std::vector<float> g(64, r ? 1.0f : -3.0f);
    ASSERT_EQ(tsr_tensor_allreduce(t, g.data(), nullptr), TSR_OK) << lastError();
    EXPECT_EQ(std::fabs(g[0]), 2.0f);  // eta = mean over ranks of mean |g|
    tsr_tensor_destroy(t);
  });
}

}  // namespace
