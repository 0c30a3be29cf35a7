// Checks shared by the direct device path tests (device_direct_test.cc, compressed_direct_test.cc,
// compressed_hier_direct_test.cc, marsit_hier_direct_test.cc). Each takes the tensor type
// (MarsitTensor, CompressedTensor: same device interface) and the file's own input function, so
// what a file checks beyond these stays in that file.
// Helpers with ASSERTs return void: call them in ASSERT_NO_FATAL_FAILURE, which looks at this
// rank's thread only (a failure on another rank does not stop this one).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/communicator.h"
#include "tests/support/device_world.h"
#include "tests/support/thread_world.h"

namespace tsr::testing {

using Params = std::map<std::string, std::string>;
using InputOf = float (*)(int rank, size_t j, int step);

// The compressed tensors' inputs (flat and two-level tests alike): signed zeros, and every 7th
// value a thousand times smaller than its neighbours.
inline float compressedInputOf(int rank, size_t j, int step) {
  if (j % 89 == 3) return 0.0f;
  if (j % 89 == 4) return -0.0f;
  return std::sin(0.37f * static_cast<float>(j + 1) * static_cast<float>(rank + 2) + 0.9f * step) * (1.0f + rank) *
         (j % 7 == 1 ? 1e-3f : 1.0f);
}

inline bool sameBits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// Ranks spread round-robin over `hosts` fake hosts (what makes a two-level plan or a torus).
inline Settings onFakeHosts(int rank, int hosts) {
  return Settings{{"TSR_TEST_HOST_ID", "fake" + std::to_string(rank % hosts)}};
}
// Small chunks, so that a few thousand floats still make several messages.
inline Settings withSmallChunks(Settings s) {
  s["TSR_CHUNK_BYTES"] = "1024";
  return s;
}

// One rank's host tensor, direct device tensor and staged tensor, alike but for their memory,
// and the buffers of a step: h (host), s (staged), device (count floats of the fake device).
template <class Tensor>
struct DirectHostStaged {
  std::unique_ptr<Tensor> host, direct, staged;
  Opened opened, stagedOpened;
  float* device = nullptr;
  std::vector<float> h, s;
  ~DirectHostStaged() {
    if (device) opened.kernels->release(device);
  }
};

// Creates <prefix>-host, <prefix>-dev and <prefix>-stg. The direct one must take the direct
// path (opening the kernels, not staging) and say so naming itself; the staged one is given
// staging explicitly, so it stages even where the direct path could be taken.
template <class Tensor>
void openDirectHostStaged(runtime::Communicator& comm, const std::string& prefix, size_t count, const Params& params,
                          DirectHostStaged<Tensor>& t) {
  auto host = Tensor::create(comm, prefix + "-host", count, params);
  auto direct = Tensor::create(comm, prefix + "-dev", count, params);
  auto staged = Tensor::create(comm, prefix + "-stg", count, params);
  ASSERT_TRUE(host.isOk() && direct.isOk() && staged.isOk()) << host.status().toString();
  t.host = host.take();
  t.direct = direct.take();
  t.staged = staged.take();
  auto note = t.direct->useDeviceMemory(t.opened.openers(prefix + "-dev", count));
  ASSERT_TRUE(note.isOk()) << note.status().toString();
  EXPECT_NE(note.value().find("direct device path"), std::string::npos) << note.value();
  EXPECT_NE(note.value().find("tensor " + prefix + "-dev"), std::string::npos) << note.value();
  ASSERT_TRUE(t.direct->directDevice());
  EXPECT_EQ(t.opened.kernelOpens, 1);
  EXPECT_EQ(t.opened.stagingOpens, 0);
  auto stg = t.stagedOpened.openers(prefix + "-stg", count).staging();
  ASSERT_TRUE(stg.isOk());
  ASSERT_TRUE(t.staged->setStaging(stg.value()).isOk());

  auto devMem = t.opened.kernels->allocate(count * sizeof(float));
  ASSERT_TRUE(devMem.isOk());
  t.device = static_cast<float*>(devMem.value());
  t.h.resize(count);
  t.s.resize(count);
}

// What a direct step posted: payloads both ways as device memory, and in host memory nothing
// larger than 16 bytes (the argument headers and the 2-double scalars or flags).
inline void expectPayloadsOnDevice(const TransferCounts& c, int rank, int step) {
  EXPECT_GT(c.cudaSends, 0) << "rank " << rank << " step " << step;
  EXPECT_GT(c.cudaRecvs, 0) << "rank " << rank << " step " << step;
  EXPECT_LE(c.largestHost, 16u) << "rank " << rank << " step " << step;
}

// The caller re-lays-out its buffer after a step (as DDP does to a bucket) and moves the
// residual along (setResidual, here reversed plus a mark of the rank): all three tensors take
// it, read it back as set, and the next steps (expectSameResultsAndResiduals) keep them equal.
// A tensor that keeps no residual (ef=none) refuses a non-zero one alike on all three.
template <class Tensor>
void relayoutResidualOnAllThree(DirectHostStaged<Tensor>& t, int rank) {
  const size_t count = t.h.size();
  std::vector<float> moved(count), back(count);
  t.host->residual(moved.data());
  std::reverse(moved.begin(), moved.end());
  for (size_t j = 0; j < count; j += 7) moved[j] += 0.25f * static_cast<float>(rank + 1);
  const Status onHost = t.host->setResidual(moved.data());
  for (Tensor* x : {t.direct.get(), t.staged.get()}) {
    Status st = x->setResidual(moved.data());
    EXPECT_EQ(st.code(), onHost.code()) << "rank " << rank << ": " << st.toString() << " vs " << onHost.toString();
  }
  if (!onHost.isOk()) return;
  for (Tensor* x : {t.host.get(), t.direct.get(), t.staged.get()}) {
    x->residual(back.data());
    EXPECT_TRUE(sameBits(moved.data(), back.data(), count)) << "rank " << rank << ": the residual set is not read back";
  }
}

// One step of all three on the same input. The staged step must post no device buffer; the
// direct one runs in the non-blocking form at step 1 (blocking otherwise). `direct` gets what
// the direct step posted.
template <class Tensor>
void stepAllThree(DirectHostStaged<Tensor>& t, RecordingTransport& wire, int rank, int step, InputOf inputOf,
                  TransferCounts& direct) {
  for (size_t j = 0; j < t.h.size(); ++j) t.h[j] = t.s[j] = t.device[j] = inputOf(rank, j, step);
  ASSERT_TRUE(t.host->allreduce(t.h.data()).isOk());
  wire.reset();
  ASSERT_TRUE(t.staged->allreduce(t.s.data()).isOk());
  EXPECT_EQ(wire.counts().cudaSends + wire.counts().cudaRecvs, 0) << "staged step posted device buffers";
  wire.reset();
  if (step == 1) {
    auto request = t.direct->allreduceAsync(t.device);
    ASSERT_TRUE(request.isOk()) << request.status().toString();
    ASSERT_TRUE(request.value()->wait().isOk());
  } else {
    Status st = t.direct->allreduce(t.device);
    ASSERT_TRUE(st.isOk()) << st.toString();
  }
  direct = wire.counts();
}

// Results, then residuals, of the direct and the staged tensor equal the host tensor's bit for
// bit. Leaves the host tensor's residual in `hostResidual` for the file's own checks.
template <class Tensor>
void expectSameResultsAndResiduals(const DirectHostStaged<Tensor>& t, int rank, int step,
                                   std::vector<float>& hostResidual) {
  const size_t count = t.h.size();
  EXPECT_TRUE(sameBits(t.h.data(), t.device, count)) << "direct vs host, rank " << rank << " step " << step;
  EXPECT_TRUE(sameBits(t.h.data(), t.s.data(), count)) << "staged vs host, rank " << rank << " step " << step;
  std::vector<float> rd(count), rs(count);
  hostResidual.resize(count);
  t.host->residual(hostResidual.data());
  t.direct->residual(rd.data());
  t.staged->residual(rs.data());
  EXPECT_TRUE(sameBits(hostResidual.data(), rd.data(), count)) << "residual, rank " << rank << " step " << step;
  EXPECT_TRUE(sameBits(hostResidual.data(), rs.data(), count)) << "residual, rank " << rank << " step " << step;
}

// After `steps` steps: the device kernels saw device memory only, the direct tensor never
// staged, and the staged one copied to host once a step.
template <class Tensor>
void expectDeviceOnlyAndNoStaging(const DirectHostStaged<Tensor>& t, int steps) {
  EXPECT_EQ(t.opened.kernels->violations, 0) << "device kernels were given host memory";
  EXPECT_EQ(t.opened.copies->toHost + t.opened.copies->toDevice, 0) << "the direct tensor staged";
  EXPECT_EQ(t.stagedOpened.copies->toHost, steps);
}

// memory=cuda without the claimed CUDA support: staging was opened instead of the kernels, and
// the note says so and why.
template <class Tensor>
void expectChoseStaging(const Tensor& t, const Opened& opened, const Result<std::string>& note,
                        const std::string& why) {
  ASSERT_TRUE(note.isOk()) << note.status().toString();
  EXPECT_FALSE(t.directDevice());
  EXPECT_EQ(opened.kernelOpens, 0);
  EXPECT_EQ(opened.stagingOpens, 1);
  EXPECT_NE(note.value().find("staged through pinned host memory"), std::string::npos) << note.value();
  EXPECT_NE(note.value().find(why), std::string::npos) << note.value();
}

// A staged tensor's step equals the host tensor's (1000 floats, step 0 inputs), posting no
// device buffer and copying to host once.
template <class Tensor>
void expectStagedStepEqualsHost(Tensor& staged, Tensor& host, const Opened& opened, RecordingTransport& wire, int rank,
                                InputOf inputOf) {
  std::vector<float> d(1000), h(1000);
  for (size_t j = 0; j < d.size(); ++j) d[j] = h[j] = inputOf(rank, j, 0);
  ASSERT_TRUE(host.allreduce(h.data()).isOk());
  wire.reset();
  ASSERT_TRUE(staged.allreduce(d.data()).isOk());
  EXPECT_TRUE(sameBits(h.data(), d.data(), d.size()));
  EXPECT_EQ(wire.counts().cudaSends, 0);
  EXPECT_EQ(opened.copies->toHost, 1);
}

// memory=cuda without the claimed CUDA support, on this rank: a tensor "emb" of 1000 floats
// chooses staging (expectChoseStaging, `opened` is the caller's for checks of its own), then
// `beforeStep` (if any) and one step that equals an "emb-host" tensor's (expectStagedStepEqualsHost).
template <class Tensor>
void expectStagesAndEqualsHost(runtime::Communicator& comm, const Params& params, const std::string& why,
                               RecordingTransport& wire, InputOf inputOf, Opened& opened,
                               const std::function<void(Tensor&)>& beforeStep = {}) {
  auto t = Tensor::create(comm, "emb", 1000, params);
  auto host = Tensor::create(comm, "emb-host", 1000, params);
  ASSERT_TRUE(t.isOk() && host.isOk()) << t.status().toString() << " / " << host.status().toString();
  auto note = t.value()->useDeviceMemory(opened.openers("emb", 1000));
  ASSERT_NO_FATAL_FAILURE(expectChoseStaging(*t.value(), opened, note, why));
  if (beforeStep) beforeStep(*t.value());
  expectStagedStepEqualsHost(*t.value(), *host.value(), opened, wire, comm.rank(), inputOf);
}

// A host pointer given to a direct tensor named `name` is refused naming the tensor and rank.
template <class Tensor>
void expectHostPointerRefused(Tensor& t, const std::string& name, int rank) {
  std::vector<float> onHost(1000, 1.0f);
  auto refused = t.allreduceAsync(onHost.data());
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
  const std::string& m = refused.status().message();
  EXPECT_NE(m.find("device tensor " + name + " (memory=cuda, rank " + std::to_string(rank)), std::string::npos) << m;
  EXPECT_NE(m.find("host memory"), std::string::npos) << m;
}

// A direct tensor `name` of 1000 floats on this rank for the bad input tests: it must take the
// direct path and refuse a host pointer (expectHostPointerRefused).
template <class Tensor>
void openDirectRefusingHostMemory(runtime::Communicator& comm, const std::string& name, const Params& params,
                                  Opened& opened, std::unique_ptr<Tensor>& t) {
  auto created = Tensor::create(comm, name, 1000, params);
  ASSERT_TRUE(created.isOk()) << created.status().toString();
  t = created.take();
  ASSERT_TRUE(t->useDeviceMemory(opened.openers(name, 1000)).isOk());
  ASSERT_TRUE(t->directDevice());
  ASSERT_NO_FATAL_FAILURE(expectHostPointerRefused(*t, name, comm.rank()));
}

// Once a direct tensor `name` has run `stepsRun` steps its memory is fixed: it refuses the
// device kernels again (naming the steps run) and refuses staging (naming the direct path).
template <class Tensor>
void expectMemoryFixedAfterSteps(Tensor& t, Opened& opened, const std::string& name, int stepsRun) {
  Status again = t.setDeviceKernels(opened.kernels);
  EXPECT_NE(again.message().find("step " + std::to_string(stepsRun) + " has run"), std::string::npos)
      << again.toString();
  auto stg = opened.openers(name, 1000).staging();
  ASSERT_TRUE(stg.isOk());
  Status staged = t.setStaging(stg.value());
  EXPECT_NE(staged.message().find("direct device path"), std::string::npos) << staged.toString();
}

}  // namespace tsr::testing
