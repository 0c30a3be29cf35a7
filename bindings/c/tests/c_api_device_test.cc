// Device tensors through the C API on a real GPU: a memory=cuda tensor given cudaMalloc'd
// gradients must give the host tensor's result bit for bit. Built only with CUDA; skipped
// without a CUDA device (docs/gpu.md runs it on a GPU machine). The staging orchestration itself is tested without a
// GPU by runtime/tests/device_staging_test.cc and tests/device_tensor_test.cc (fake copier).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "bindings/c/tests/c_ranks.h"

using tsr::ctest::lastError;
using tsr::ctest::runCRanks;

namespace {

bool haveGpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

TEST(CApiDevice, CudaTensorsMatchHostTensors) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device: memory=cuda tensors compiled but not run";
  const size_t count = 10007;
  runCRanks(2, [&](tsr_comm_t comm, int r) {
    for (const char* algorithm : {"marsit", "compressed", "spardl"}) {
      std::string algo = algorithm;
      tsr_param_t host[] = {{"algorithm", algorithm}, {"compressor", "topk"}, {"k", "0.01"}};
      tsr_param_t dev[] = {{"algorithm", algorithm}, {"compressor", "topk"}, {"k", "0.01"}, {"memory", "cuda"}};
      size_t np = algo == "compressed" ? 3 : 1;
      tsr_tensor_t h = nullptr, d = nullptr;
      ASSERT_EQ(tsr_tensor_create(comm, "h", count, TSR_FLOAT32, host, np, &h), TSR_OK) << lastError();
      tsr_param_t devParams[] = {dev[0], dev[3], dev[1], dev[2]};
      ASSERT_EQ(tsr_tensor_create(comm, "d", count, TSR_FLOAT32, devParams, np + 1, &d), TSR_OK) << lastError();
      float* gd = nullptr;
      ASSERT_EQ(cudaMalloc(&gd, count * sizeof(float)), cudaSuccess);
      std::vector<float> g(count), back(count), rh(count), rd(count);
      for (int step = 0; step < 3; ++step) {
        for (size_t j = 0; j < count; ++j) g[j] = std::sin(0.01f * j * (r + 1) + step);
        cudaMemcpy(gd, g.data(), count * sizeof(float), cudaMemcpyHostToDevice);
        ASSERT_EQ(tsr_tensor_allreduce(h, g.data(), nullptr), TSR_OK) << lastError();
        tsr_request_t req = nullptr;
        ASSERT_EQ(tsr_tensor_allreduce(d, gd, &req), TSR_OK) << lastError();
        ASSERT_EQ(tsr_wait(req), TSR_OK) << lastError();
        tsr_request_free(req);
        cudaMemcpy(back.data(), gd, count * sizeof(float), cudaMemcpyDeviceToHost);
        EXPECT_EQ(std::memcmp(g.data(), back.data(), count * sizeof(float)), 0) << algo << " step " << step;
        ASSERT_EQ(tsr_tensor_residual(h, rh.data()), TSR_OK);
        ASSERT_EQ(tsr_tensor_residual(d, rd.data()), TSR_OK);  // read back from the device on the direct path
        EXPECT_EQ(std::memcmp(rh.data(), rd.data(), count * sizeof(float)), 0) << algo << " step " << step;
      }
      // A host pointer given to a device tensor is refused, naming the tensor.
      EXPECT_NE(tsr_tensor_allreduce(d, g.data(), nullptr), TSR_OK);
      EXPECT_NE(lastError().find("device tensor d"), std::string::npos) << lastError();
      cudaFree(gd);
      tsr_tensor_destroy(h);
      tsr_tensor_destroy(d);
    }
  });
}

// The caller's input may still be in flight on the default stream when the call is made: a
// cudaMemcpy from pageable memory returns once the data is staged, before its DMA has
// finished. Dense staging must wait for it (the event recorded on the default stream in the
// call); before it did, a few results in every hundred came from the buffer's earlier contents.
TEST(CApiDevice, DenseCollectivesWaitForTheCallersDefaultStreamWork) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device: device staging compiled but not run";
  const size_t count = 1 << 20;  // 4 MiB: a pageable copy still in flight at return
  runCRanks(2, [&](tsr_comm_t comm, int r) {
    ASSERT_EQ(tsr_comm_set_memory_type(comm, TSR_MEM_CUDA), TSR_OK) << lastError();
    float* in = nullptr;
    float* out = nullptr;
    ASSERT_EQ(cudaMalloc(&in, count * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, count * sizeof(float)), cudaSuccess);
    std::vector<float> g(count), back(count);
    int wrong = 0;
    for (int round = 0; round < 50; ++round) {
      // Integers: the sum over 2 ranks is exact, whatever the order.
      for (size_t j = 0; j < count; ++j) g[j] = static_cast<float>((j + round * 7 + r * 3) % 1000);
      cudaMemcpy(in, g.data(), count * sizeof(float), cudaMemcpyHostToDevice);  // no synchronize
      ASSERT_EQ(tsr_allreduce(comm, in, out, count, TSR_FLOAT32, TSR_SUM, nullptr), TSR_OK) << lastError();
      cudaMemcpy(back.data(), out, count * sizeof(float), cudaMemcpyDeviceToHost);
      for (size_t j = 0; j < count; ++j) {
        float want = static_cast<float>((j + round * 7) % 1000 + (j + round * 7 + 3) % 1000);
        if (back[j] != want) {
          ++wrong;
          ADD_FAILURE() << "rank " << r << " round " << round << " element " << j << ": " << back[j] << ", want "
                        << want;
          break;
        }
      }
      if (wrong > 3) break;
    }
    cudaFree(in);
    cudaFree(out);
  });
}

// The input made on a non-blocking stream of the caller's own, behind a queue of work there:
// with tsr_comm_set_stream the collective reads it only once that stream has reached the call
// (without, it would read whatever the buffer held: the default stream does not order a
// non-blocking one).
TEST(CApiDevice, DenseCollectivesWaitForTheCallersOwnStream) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device: stream ordering compiled but not run";
  const size_t count = 1 << 20;
  runCRanks(2, [&](tsr_comm_t comm, int r) {
    ASSERT_EQ(tsr_comm_set_memory_type(comm, TSR_MEM_CUDA), TSR_OK) << lastError();
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(tsr_comm_set_stream(comm, stream), TSR_OK) << lastError();
    float *in = nullptr, *busy = nullptr, *pinned = nullptr;
    ASSERT_EQ(cudaMalloc(&in, count * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&busy, 64 * count * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMallocHost(&pinned, count * sizeof(float)), cudaSuccess);
    std::vector<float> back(count);
    for (int round = 0; round < 20; ++round) {
      for (size_t j = 0; j < count; ++j) pinned[j] = static_cast<float>((j + round * 5 + r) % 777);
      cudaMemsetAsync(in, 0, count * sizeof(float), stream);
      for (int k = 0; k < 8; ++k) cudaMemsetAsync(busy, k, 64 * count * sizeof(float), stream);  // ~2 GiB written
      cudaMemcpyAsync(in, pinned, count * sizeof(float), cudaMemcpyHostToDevice, stream);
      ASSERT_EQ(tsr_allreduce(comm, in, in, count, TSR_FLOAT32, TSR_SUM, nullptr), TSR_OK) << lastError();
      cudaMemcpy(back.data(), in, count * sizeof(float), cudaMemcpyDeviceToHost);
      const size_t j = count - 1;
      const float want = static_cast<float>((j + round * 5) % 777 + (j + round * 5 + 1) % 777);
      ASSERT_EQ(back[j], want) << "rank " << r << " round " << round << ": read before the caller's stream got there";
      cudaStreamSynchronize(stream);  // the next round rewrites `pinned`
    }
    tsr_comm_set_stream(comm, nullptr);
    cudaFreeHost(pinned);
    cudaFree(busy);
    cudaFree(in);
    cudaStreamDestroy(stream);
  });
}

// Holds on a stream: without a device (this machine, CI) refused by name; NULLs named.
TEST(CApiDevice, StreamHoldsNeedADeviceAndBadArgumentsAreNamed) {
  tsr_stream_hold_t hold = nullptr;
  EXPECT_EQ(tsr_stream_hold(nullptr, nullptr), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("tsr_stream_hold: hold is NULL"), std::string::npos) << lastError();
  EXPECT_EQ(tsr_stream_release(nullptr), TSR_ERR_INVALID_ARGUMENT);
  const tsr_status_t st = tsr_stream_hold(nullptr, &hold);
  if (haveGpu()) {  // the legacy default stream: held, then released
    ASSERT_EQ(st, TSR_OK) << lastError();
    ASSERT_EQ(tsr_stream_release(hold), TSR_OK);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  } else {
    EXPECT_EQ(st, TSR_ERR_NOT_SUPPORTED);
    EXPECT_EQ(hold, nullptr);
    EXPECT_NE(lastError().find("tsr_stream_hold: "), std::string::npos) << lastError();
  }
}

// A stream held for an allreduce (released by its completion callback) runs its later work
// only once the result is there, while the calling thread went on at once: rank 1 posts its
// part only after rank 0 has seen its stream held.
TEST(CApiDevice, AStreamHeldForACollectiveGoesOnOnceItHasEnded) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device: stream holds compiled but not run";
  const size_t count = 1 << 20;
  std::atomic<bool> rankZeroHeld{false};
  runCRanks(2, [&](tsr_comm_t comm, int r) {
    ASSERT_EQ(tsr_comm_set_memory_type(comm, TSR_MEM_CUDA), TSR_OK) << lastError();
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(tsr_comm_set_stream(comm, stream), TSR_OK) << lastError();
    float *in = nullptr, *out = nullptr;
    ASSERT_EQ(cudaMalloc(&in, count * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMallocHost(&out, count * sizeof(float)), cudaSuccess);
    // Warm-up: the staging buffers taken before any hold (an allocation may wait for the
    // device) and kept for rank 1's allreduce, posted while rank 0's stream is held.
    ASSERT_EQ(tsr_allreduce(comm, in, in, count, TSR_FLOAT32, TSR_SUM, nullptr), TSR_OK) << lastError();
    std::vector<float> mine(count, 1.0f + r);
    ASSERT_EQ(cudaMemcpyAsync(in, mine.data(), count * sizeof(float), cudaMemcpyHostToDevice, stream), cudaSuccess);
    if (r == 1)
      while (!rankZeroHeld.load()) std::this_thread::yield();
    tsr_request_t req = nullptr;
    ASSERT_EQ(tsr_allreduce(comm, in, in, count, TSR_FLOAT32, TSR_SUM, &req), TSR_OK) << lastError();
    tsr_stream_hold_t hold = nullptr;
    ASSERT_EQ(tsr_stream_hold(stream, &hold), TSR_OK) << lastError();
    ASSERT_EQ(tsr_request_on_complete(
                  req, [](void* h, tsr_status_t) { tsr_stream_release(static_cast<tsr_stream_hold_t>(h)); }, hold),
              TSR_OK);
    ASSERT_EQ(cudaMemcpyAsync(out, in, count * sizeof(float), cudaMemcpyDeviceToHost, stream), cudaSuccess);
    if (r == 0) {
      EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady) << "the stream went past the hold before rank 1 posted";
      rankZeroHeld = true;
    }
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(out[0], 3.0f);
    EXPECT_EQ(out[count - 1], 3.0f);
    EXPECT_EQ(tsr_wait(req), TSR_OK) << lastError();
    tsr_request_free(req);
    tsr_comm_set_stream(comm, nullptr);
    cudaFreeHost(out);
    cudaFree(in);
    cudaStreamDestroy(stream);
  });
}

// SelSync memory=cuda on cudaMalloc'd buckets: a synchronized step leaves their exact average
// on the device, a local one leaves them as they were.
TEST(CApiDevice, SelSyncAveragesDeviceBucketsOnSynchronizedStepsOnly) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device: SelSync memory=cuda compiled but not run";
  runCRanks(2, [&](tsr_comm_t comm, int r) {
    const size_t counts[] = {1000, 3};
    tsr_param_t params[] = {{"delta", "0.5"}, {"ewma_window", "1"}, {"memory", "cuda"}};
    tsr_selsync_t s = nullptr;
    ASSERT_EQ(tsr_selsync_create(comm, params, 3, counts, 2, &s), TSR_OK) << lastError();
    float* buckets[2] = {nullptr, nullptr};
    for (int b = 0; b < 2; ++b) ASSERT_EQ(cudaMalloc(&buckets[b], counts[b] * sizeof(float)), cudaSuccess);
    for (int step = 0; step < 3; ++step) {
      for (int b = 0; b < 2; ++b) {
        std::vector<float> v(counts[b], 10.0f * r + step);
        ASSERT_EQ(cudaMemcpy(buckets[b], v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
      }
      int synced = -1;
      // Rank 0's norm jumps at step 2: steps 0 and 1 stay local, step 2 synchronizes.
      ASSERT_EQ(tsr_selsync_step(s, r == 0 && step == 2 ? 90.0 : 10.0, buckets, &synced), TSR_OK) << lastError();
      ASSERT_EQ(synced, step == 2 ? 1 : 0) << "step " << step;
      std::vector<float> back(counts[0]);
      ASSERT_EQ(cudaMemcpy(back.data(), buckets[0], back.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_EQ(back[999], synced ? 5.0f + step : 10.0f * r + step) << "rank " << r << " step " << step;
    }
    tsr_selsync_destroy(s);
    for (float* b : buckets) cudaFree(b);
  });
}

}  // namespace

// Device tensor steps keep the caller's order as dense calls do, and the progress thread never
// waits on a caller's stream. (a) The gradient made on a non-blocking stream of the caller's
// own, behind a queue of work, named with tsr_comm_set_stream: the step reads it only once
// that stream got there (equal to the host tensor's step, bit for bit). (b) Rank 0 holds the
// legacy default stream for a dense allreduce (released by its completion) and calls a tensor
// step after the hold: the step waits for the release, which rank 0's progress thread gives
// once rank 1 has posted; were a step's kernels to wait on the default stream on a progress
// thread (a blocking stream, a synchronize), neither would end. The ranks are threads of one
// process and share that default stream, so rank 1 stays off it while the hold may be queued:
// its calls name its own stream, and what would allocate pinned memory (the dense call's
// staging buffers) was taken before, by a warm-up allreduce.
TEST(CApiDevice, TensorStepsKeepTheCallersOrderWithoutStallingTheProgressThread) {
  if (!haveGpu()) GTEST_SKIP() << "no CUDA device: the caller's order of tensor steps compiled but not run";
  const size_t count = 1 << 20;
  std::atomic<bool> rankZeroPosted{false}, rankOneReady{false};
  runCRanks(2, [&](tsr_comm_t comm, int r) {
    tsr_param_t hostParams[] = {{"algorithm", "marsit"}};
    tsr_param_t devParams[] = {{"algorithm", "marsit"}, {"memory", "cuda"}};
    tsr_tensor_t h = nullptr, d = nullptr;
    ASSERT_EQ(tsr_tensor_create(comm, "h", count, TSR_FLOAT32, hostParams, 1, &h), TSR_OK) << lastError();
    ASSERT_EQ(tsr_tensor_create(comm, "d", count, TSR_FLOAT32, devParams, 2, &d), TSR_OK) << lastError();
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    float *gd = nullptr, *busy = nullptr, *pinned = nullptr, *dense = nullptr;
    ASSERT_EQ(cudaMalloc(&gd, count * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&busy, 64 * count * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&dense, count * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMallocHost(&pinned, count * sizeof(float)), cudaSuccess);
    std::vector<float> g(count), back(count);
    // (a)
    ASSERT_EQ(tsr_comm_set_stream(comm, stream), TSR_OK) << lastError();
    for (int step = 0; step < 3; ++step) {
      for (size_t j = 0; j < count; ++j) g[j] = pinned[j] = std::sin(0.01f * j * (r + 1) + step);
      cudaMemsetAsync(gd, 0, count * sizeof(float), stream);
      for (int k = 0; k < 8; ++k) cudaMemsetAsync(busy, k, 64 * count * sizeof(float), stream);
      cudaMemcpyAsync(gd, pinned, count * sizeof(float), cudaMemcpyHostToDevice, stream);
      ASSERT_EQ(tsr_tensor_allreduce(h, g.data(), nullptr), TSR_OK) << lastError();
      ASSERT_EQ(tsr_tensor_allreduce(d, gd, nullptr), TSR_OK) << lastError();
      cudaMemcpy(back.data(), gd, count * sizeof(float), cudaMemcpyDeviceToHost);
      ASSERT_EQ(std::memcmp(g.data(), back.data(), count * sizeof(float)), 0)
          << "rank " << r << " step " << step << ": read before the caller's stream got there";
      cudaStreamSynchronize(stream);  // the next step rewrites `pinned`
    }
    // (b) Rank 1 keeps its own stream named; rank 0 names none (the default stream).
    if (r == 0) {
      ASSERT_EQ(tsr_comm_set_stream(comm, nullptr), TSR_OK);
    }
    ASSERT_EQ(tsr_comm_set_memory_type(comm, TSR_MEM_CUDA), TSR_OK) << lastError();
    // Warm-up: the staging buffers of this size taken (an allocation may wait for the device)
    // and kept for the allreduce below.
    ASSERT_EQ(tsr_allreduce(comm, dense, dense, count, TSR_FLOAT32, TSR_SUM, nullptr), TSR_OK) << lastError();
    std::vector<float> ones(count, 1.0f + r);
    cudaMemcpy(dense, ones.data(), count * sizeof(float), cudaMemcpyHostToDevice);
    for (size_t j = 0; j < count; ++j) g[j] = std::cos(0.01f * j * (r + 1));
    cudaMemcpy(gd, g.data(), count * sizeof(float), cudaMemcpyHostToDevice);
    if (r == 0) {
      while (!rankOneReady.load()) std::this_thread::yield();
    } else {
      rankOneReady = true;  // off the default stream from here until its step has ended
      while (!rankZeroPosted.load()) std::this_thread::yield();
    }
    tsr_request_t sum = nullptr, step = nullptr;
    ASSERT_EQ(tsr_allreduce(comm, dense, dense, count, TSR_FLOAT32, TSR_SUM, &sum), TSR_OK) << lastError();
    if (r == 0) {
      tsr_stream_hold_t hold = nullptr;
      ASSERT_EQ(tsr_stream_hold(nullptr, &hold), TSR_OK) << lastError();
      ASSERT_EQ(tsr_request_on_complete(
                    sum, [](void* p, tsr_status_t) { tsr_stream_release(static_cast<tsr_stream_hold_t>(p)); }, hold),
                TSR_OK);
    }
    ASSERT_EQ(tsr_tensor_allreduce(d, gd, &step), TSR_OK) << lastError();
    if (r == 0) rankZeroPosted = true;
    ASSERT_EQ(tsr_tensor_allreduce(h, g.data(), nullptr), TSR_OK) << lastError();
    EXPECT_EQ(tsr_wait(sum), TSR_OK) << lastError();
    EXPECT_EQ(tsr_wait(step), TSR_OK) << lastError();
    // Rank 0's step began after the release, and rank 1's ended after rank 0's: no hold is left.
    cudaMemcpy(back.data(), gd, count * sizeof(float), cudaMemcpyDeviceToHost);
    EXPECT_EQ(std::memcmp(g.data(), back.data(), count * sizeof(float)), 0) << "rank " << r;
    cudaMemcpy(back.data(), dense, count * sizeof(float), cudaMemcpyDeviceToHost);
    EXPECT_EQ(back[count - 1], 3.0f);
    tsr_request_free(sum);
    tsr_request_free(step);
    tsr_comm_set_memory_type(comm, TSR_MEM_HOST);
    tsr_comm_set_stream(comm, nullptr);
    cudaFreeHost(pinned);
    cudaFree(dense);
    cudaFree(busy);
    cudaFree(gd);
    cudaStreamDestroy(stream);
    tsr_tensor_destroy(h);
    tsr_tensor_destroy(d);
  });
}
