// The direct device path of the flat CompressedTensor (algorithms/compressed/
// compressed_device.h) over real UCX, ranks as threads, with the fakes of
// tests/support/device_fakes.h: a "device" of host memory running the CPU kernels, and a
// transport wrapper that claims CUDA support and records what is posted as what. Checked: the
// path chosen (and its note), results and residuals bit-identical to a host tensor and to a
// staged one over several steps, payloads posted as kCuda, the codec's math run by the device
// kernels on device memory only, no staging (bad input: compressed_direct_errors_test.cc).
// No GPU and no CUDA-capable UCX are involved: the CUDA kernels themselves are not run.
// The checks every direct path test shares are in tests/support/direct_path_checks.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "algorithms/compress/momentum.h"
#include "algorithms/compress/registry.h"
#include "algorithms/compressed/compressed_tensor.h"
#include "algorithms/compressed/device_codec.h"
#include "algorithms/kernels/dithering.h"
#include "tests/support/direct_path_checks.h"

namespace tsr {
namespace {

using compressed::CompressedTensor;
using testing::Opened;
using testing::Params;
using testing::sameBits;
using testing::World;

constexpr int kSteps = 4;

constexpr testing::InputOf inputOf = testing::compressedInputOf;

// kSteps on a host tensor, a direct device tensor and a staged tensor; all three must agree
// bit for bit, result and residual (the error-feedback state), at every step.
void expectDirectEqualsHostAndStaged(int n, size_t count, Params params) {
  World world(n);
  params["algorithm"] = "compressed";
  testing::runRanksWrapped(
      n,
      [&](runtime::Communicator& comm) {
        ASSERT_TRUE(comm.transportMovesCuda());
        testing::DirectHostStaged<CompressedTensor> t;
        ASSERT_NO_FATAL_FAILURE(testing::openDirectHostStaged(comm, "w", count, params, t));
        testing::RecordingTransport& wire = *world.transports[comm.rank()];
        std::vector<float> rh, mh(count), md(count);
        for (int step = 0; step < kSteps; ++step) {
          testing::TransferCounts c;
          ASSERT_NO_FATAL_FAILURE(testing::stepAllThree(t, wire, comm.rank(), step, inputOf, c));
          // The ring all-gather: N-1 slots out and in (in 1 KiB chunks), all of them device memory.
          EXPECT_GE(c.cudaSends, n - 1) << "rank " << comm.rank() << " step " << step;
          EXPECT_GE(c.cudaRecvs, n - 1) << "rank " << comm.rank() << " step " << step;
          EXPECT_EQ(c.cudaBytes, 2 * (n - 1) * t.direct->slotBytes()) << "rank " << comm.rank();
          // In host memory only the argument headers and the 2-double NaN flag.
          EXPECT_LE(c.largestHost, 16u) << "rank " << comm.rank() << " step " << step;
          testing::expectSameResultsAndResiduals(t, comm.rank(), step, rh);
          if (step == 1) {
            ASSERT_NO_FATAL_FAILURE(testing::relayoutResidualOnAllThree(t, comm.rank()));
          }
          t.host->momentum(mh.data());
          t.direct->momentum(md.data());
          EXPECT_TRUE(sameBits(mh.data(), md.data(), count)) << "momentum, rank " << comm.rank() << " step " << step;
        }
        EXPECT_EQ(t.direct->step(), static_cast<uint64_t>(kSteps));
        testing::FakeDeviceKernels& k = *t.opened.kernels;
        const std::string kind = params.at("compressor");
        const bool cast = kind == "fp16" || kind == "bf16";
        // The NaN scan of g, with the momentum hand-off of g + mu M, with momentum of the shifted
        // gradient too, and (the casts) of the payload cast back, which finds a finite value the
        // cast made Inf; the shifted gradient's and the cast's scans twice: once before the flag
        // exchange (firstUnencodable), once in compress.
        const bool momentum = params.count("momentum") > 0;
        const int handoff = params.count("optimizer_momentum") ? 2 : 0;
        EXPECT_EQ(k.scans, kSteps * (1 + (handoff ? 1 : 0) + (momentum ? 2 : 0) + (cast ? 2 : 0)))
            << "the scans did not run on the device";
        // The momentum hand-off: mu M and M' - mu M (two scales), g + mu M and the subtraction.
        EXPECT_EQ(k.scales, kSteps * (1 + handoff)) << "the average did not run on the device";
        EXPECT_EQ(k.reduces, kSteps * (n + handoff)) << "the payload sums did not run on the device";
        const bool ef = !params.count("ef") || params.at("ef") == "vanilla";
        if (cast) {
          EXPECT_EQ(k.casts, kSteps * (5 + n - (ef ? 0 : 1)))
              << "the check's cast and cast back, compress's (ef: and its decompress), N decompresses";
        }
        if (kind == "topk" || kind == "randomk") {
          // randomk redraws its indices for each payload it decompresses.
          EXPECT_EQ(k.selects, kSteps * (kind == "topk" ? 1 : 1 + n + (ef ? 1 : 0)))
              << "the selection did not run on the device";
          EXPECT_EQ(k.gathers, kSteps);
          EXPECT_EQ(k.scatters, kSteps * n + (ef ? kSteps : 0));  // ef decompresses its own payload too
        }
        if (kind == "onebit" || kind == "dithering") {
          // onebit's scale blocks: one sum and one decode per block.
          const bool scaled = kind == "dithering" || (params.count("scaling") && params.at("scaling") == "true");
          const size_t block = scaled && params.count("scale_block") ? std::stoul(params.at("scale_block")) : 0;
          const int blocks = block ? static_cast<int>((count + block - 1) / block) : 1;
          EXPECT_EQ(k.packs, kSteps) << "the encoding did not run on the device";
          EXPECT_EQ(k.unpacks, kSteps * (n + (ef ? 1 : 0)) * blocks) << "the decoding did not run on the device";
          EXPECT_EQ(k.sums, scaled ? kSteps * blocks : 0) << "the scale was not computed on the device";
        }
        EXPECT_EQ(k.efKeeps, ef ? kSteps : 0) << "the residual update did not run on the device";
        EXPECT_EQ(k.addScans, ef ? 2 * kSteps : 0) << "g + e (checked, then compressed) did not run on the device";
        EXPECT_EQ(k.nesterovs, momentum ? 2 * kSteps : 0) << "the momentum did not run on the device";
        testing::expectDeviceOnlyAndNoStaging(t, kSteps);
      },
      [](int) { return testing::withSmallChunks({}); }, world.wrapper(true));
}

void sweep(const Params& params, size_t count = 3001) {
  for (int n = 2; n <= 5; ++n) {
    SCOPED_TRACE("N=" + std::to_string(n));
    expectDirectEqualsHostAndStaged(n, count, params);
  }
}

TEST(CompressedDirect, NoneEqualsHostAndStaged) { sweep({{"compressor", "none"}, {"ef", "none"}}); }
TEST(CompressedDirect, Fp16EqualsHostAndStaged) { sweep({{"compressor", "fp16"}, {"ef", "none"}}); }
TEST(CompressedDirect, Bf16EqualsHostAndStaged) { sweep({{"compressor", "bf16"}, {"ef", "none"}}, 1000); }
TEST(CompressedDirect, TopkEqualsHostAndStaged) { sweep({{"compressor", "topk"}, {"k", "0.01"}, {"ef", "none"}}); }
TEST(CompressedDirect, RandomkEqualsHostAndStaged) {
  sweep({{"compressor", "randomk"}, {"k", "50"}, {"seed", "9"}, {"ef", "none"}});
}

TEST(CompressedDirect, ErrorFeedbackEqualsHostAndStaged) {
  sweep({{"compressor", "fp16"}});  // ef=vanilla is the compressed tensor's default
  sweep({{"compressor", "topk"}, {"k", "0.01"}, {"ef", "vanilla"}});
}
TEST(CompressedDirect, MomentumEqualsHostAndStaged) {
  sweep({{"compressor", "randomk"}, {"k", "50"}, {"momentum", "nesterov"}, {"momentum_mu", "0.8"}});
  sweep({{"compressor", "bf16"}, {"ef", "none"}, {"momentum", "nesterov"}}, 1000);
}

// Tiny tensors: one element, fewer elements than ranks.
TEST(CompressedDirect, TinyTensorsEqualHostAndStaged) {
  sweep({{"compressor", "topk"}, {"k", "1"}, {"momentum", "nesterov"}}, 1);
  sweep({{"compressor", "onebit"}, {"scaling", "true"}}, 3);
  sweep({{"compressor", "dithering"}, {"k", "3"}, {"dithering_normalize", "l2"}}, 3);
}

TEST(CompressedDirect, OnebitEqualsHostAndStaged) {
  sweep({{"compressor", "onebit"}, {"scaling", "true"}, {"seed", "5"}});
  sweep({{"compressor", "onebit"}, {"ef", "none"}}, 1000);  // unscaled: +-1
}
// Scale blocks (the last one partial) and the momentum hand-off, as the onebit preset runs.
TEST(CompressedDirect, OnebitBlocksAndHandOffEqualHostAndStaged) {
  sweep({{"compressor", "onebit"}, {"scaling", "true"}, {"scale_block", "512"}, {"optimizer_momentum", "0.9"}});
  sweep({{"compressor", "topk"}, {"k", "0.01"}, {"optimizer_momentum", "0.5"}}, 1000);
  sweep({{"compressor", "fp16"}, {"ef", "none"}, {"optimizer_momentum", "0.9"}}, 1000);
}
TEST(CompressedDirect, DitheringEqualsHostAndStaged) {
  sweep({{"compressor", "dithering"}, {"k", "7"}, {"seed", "11"}});
  sweep({{"compressor", "dithering"},
         {"k", "4"},
         {"dithering_partition", "natural"},
         {"ef", "none"},
         {"momentum", "nesterov"}},
        1000);
}
// dithering_normalize=l2: the norm's sum of squares on the device in the CPU's block order
// (3001 elements: two full blocks and a tail).
TEST(CompressedDirect, DitheringL2EqualsHostAndStaged) {
  sweep({{"compressor", "dithering"}, {"k", "7"}, {"dithering_normalize", "l2"}, {"seed", "11"}});
  sweep({{"compressor", "dithering"},
         {"k", "4"},
         {"dithering_partition", "natural"},
         {"dithering_normalize", "l2"},
         {"ef", "none"},
         {"momentum", "nesterov"}});
}

// The StepKernels seam's sum of squares (what the device codec's L2 scale is rooted from) is
// kernels::ditherSumSquares's double bit for bit, on an input where a plain left-to-right sum
// gives other bits: a change of order there would rarely show in the float scale above.
TEST(CompressedDirect, SumOfSquaresInTheCpuOrder) {
  testing::FakeDeviceKernels k;
  const size_t n = 40000;
  auto* x = static_cast<float*>(k.allocate(n * sizeof(float)).value());
  for (size_t j = 0; j < n; ++j) x[j] = inputOf(0, j, 0) * (j / 1024 % 2 == 1 ? 3e-4f : 1.0f);
  x[1] = 1.0e8f;
  double sum = 0, sequential = 0;
  ASSERT_TRUE(k.sumSquares(x, n, &sum).isOk());
  const double want = kernels::ditherSumSquares(x, n);
  EXPECT_EQ(std::memcmp(&sum, &want, sizeof sum), 0) << sum << " vs " << want;
  for (size_t j = 0; j < n; ++j) sequential += static_cast<double>(x[j]) * x[j];
  EXPECT_NE(std::memcmp(&sequential, &want, sizeof want), 0) << "the input does not tell the orders apart";
  EXPECT_EQ(k.sums, 1);
  EXPECT_EQ(k.violations, 0);
  k.release(x);
}

// The device codec alone, no network: its payloads are byte-identical to the host
// compressor's at several steps, both change their residual and momentum at commit and not at
// encode, and malformed payloads get the host compressor's errors.
void expectCodecMatchesHost(const Params& params) {
  SCOPED_TRACE(params.at("compressor"));
  const size_t count = 1000;
  auto host = compress::createCompressor(params, count);
  auto spec = compress::createCompressor(params, count);
  ASSERT_TRUE(host.isOk() && spec.isOk()) << host.status().toString();
  auto kernels = std::make_shared<testing::FakeDeviceKernels>();
  auto codec = compressed::DeviceCodec::create(kernels, *spec.value(), "compressed tensor c");
  ASSERT_TRUE(codec.isOk()) << codec.status().toString();
  const size_t bytes = host.value()->maxCompressedBytes();
  std::vector<uint64_t> hostPayload((bytes + 7) / 8 + 1);  // a word of room for the k+1 case below
  auto* g = static_cast<float*>(kernels->allocate(count * 4).value());
  auto* payload = static_cast<std::byte*>(kernels->allocate(bytes + 8).value());
  auto* out = static_cast<float*>(kernels->allocate(count * 4).value());
  std::vector<float> hostOut(count);
  for (uint32_t step = 0; step < 3; ++step) {
    for (size_t j = 0; j < count; ++j) g[j] = inputOf(1, j, static_cast<int>(step));
    host.value()->setStep(step);
    const auto* m = dynamic_cast<const compress::NesterovMomentum*>(host.value().get());
    const auto hostErrorBefore = host.value()->feedbackError();
    const std::vector<float> errorBefore(hostErrorBefore.begin(), hostErrorBefore.end());
    const std::vector<float> momentumBefore =
        m ? std::vector<float>(m->momentum().begin(), m->momentum().end()) : std::vector<float>(count, 0.0f);
    auto want = host.value()->encode({g, count}, {reinterpret_cast<std::byte*>(hostPayload.data()), bytes});
    auto got = codec.value()->encode(g, payload, step);
    ASSERT_TRUE(want.isOk() && got.isOk()) << got.status().toString();
    {  // nothing moved on yet: a step that failed now would leave both as they were
      std::vector<float> state(count);
      const auto e = host.value()->feedbackError();
      EXPECT_TRUE(std::equal(e.begin(), e.end(), errorBefore.begin(), errorBefore.end())) << "step " << step;
      if (m) {
        EXPECT_TRUE(sameBits(m->momentum().data(), momentumBefore.data(), count)) << "step " << step;
      }
      ASSERT_TRUE(codec.value()->readError(state.data()).isOk());
      if (!errorBefore.empty()) {
        EXPECT_TRUE(sameBits(state.data(), errorBefore.data(), count)) << "step " << step;
      }
      ASSERT_TRUE(codec.value()->readMomentum(state.data()).isOk());
      EXPECT_TRUE(sameBits(state.data(), momentumBefore.data(), count)) << "step " << step;
    }
    ASSERT_TRUE(host.value()->commit().isOk());
    ASSERT_TRUE(codec.value()->commit().isOk());
    ASSERT_EQ(got.value(), want.value());
    EXPECT_EQ(std::memcmp(payload, hostPayload.data(), want.value()), 0) << "step " << step;
    ASSERT_TRUE(codec.value()->decompress(payload, got.value(), out).isOk());
    ASSERT_TRUE(
        host.value()->decompress({reinterpret_cast<std::byte*>(hostPayload.data()), want.value()}, hostOut).isOk());
    EXPECT_TRUE(sameBits(out, hostOut.data(), count)) << "step " << step;
    std::vector<float> state(count), zeros(count, 0.0f);
    ASSERT_TRUE(codec.value()->readError(state.data()).isOk());
    auto e = host.value()->feedbackError();
    EXPECT_TRUE(sameBits(state.data(), e.empty() ? zeros.data() : e.data(), count)) << "residual, step " << step;
    ASSERT_TRUE(codec.value()->readMomentum(state.data()).isOk());
    EXPECT_TRUE(sameBits(state.data(), m ? m->momentum().data() : zeros.data(), count)) << "momentum, step " << step;
  }
  if (params.count("ef")) {  // g + e overflowing: refused naming the inner stage, as on the host
    for (size_t j = 0; j < count; ++j) g[j] = j == 7 ? 3.0e38f : 1.0f;
    for (int twice = 0; twice < 2; ++twice) {
      auto want = host.value()->compress({g, count}, {reinterpret_cast<std::byte*>(hostPayload.data()), bytes});
      auto got = codec.value()->encode(g, payload, 3);
      ASSERT_EQ(want.isOk(), got.isOk()) << want.status().toString() << " vs " << got.status().toString();
      if (got.isOk()) {
        ASSERT_TRUE(codec.value()->commit().isOk());  // as the host's compress did
      }
      if (!want.isOk()) {
        EXPECT_EQ(got.status().code(), Code::kNumericError);
        EXPECT_NE(got.status().message().find("compressed tensor c: " + want.status().message()), std::string::npos)
            << got.status().toString() << " vs " << want.status().toString();
      }
    }
  }
  // Malformed: one byte short; and (top-k) an index past the end.
  Status shortHost = host.value()->decompress({reinterpret_cast<std::byte*>(hostPayload.data()), bytes - 8}, hostOut);
  Status shortDev = codec.value()->decompress(payload, bytes - 8, out);
  EXPECT_EQ(shortDev.code(), Code::kInvalidArgument) << shortDev.toString();
  EXPECT_NE(shortDev.message().find(shortHost.message()), std::string::npos)
      << shortDev.toString() << " vs " << shortHost.toString();
  if (params.at("compressor") == "topk") {
    const uint32_t k = reinterpret_cast<const uint32_t*>(payload)[0];
    reinterpret_cast<uint32_t*>(payload + 8)[k - 1] = 99999;
    reinterpret_cast<uint32_t*>(hostPayload.data())[2 + k - 1] = 99999;
    Status badHost =
        host.value()->decompress({reinterpret_cast<std::byte*>(hostPayload.data()), 8 + 8 * size_t{k}}, hostOut);
    Status badDev = codec.value()->decompress(payload, 8 + 8 * size_t{k}, out);
    EXPECT_NE(badHost.message().find("payload index 99999 out of range 1000"), std::string::npos) << badHost.toString();
    EXPECT_NE(badDev.message().find(badHost.message()), std::string::npos) << badDev.toString();
    // A k above the compressor's, with the byte count to match.
    reinterpret_cast<uint32_t*>(payload)[0] = reinterpret_cast<uint32_t*>(hostPayload.data())[0] = k + 1;
    badHost =
        host.value()->decompress({reinterpret_cast<std::byte*>(hostPayload.data()), 8 + 8 * size_t{k + 1}}, hostOut);
    badDev = codec.value()->decompress(payload, 8 + 8 * size_t{k + 1}, out);
    EXPECT_NE(badHost.message().find("malformed payload"), std::string::npos) << badHost.toString();
    EXPECT_NE(badDev.message().find(badHost.message()), std::string::npos) << badDev.toString();
  }
  EXPECT_EQ(kernels->violations, 0);
  for (void* p : {static_cast<void*>(g), static_cast<void*>(payload), static_cast<void*>(out)}) kernels->release(p);
}

TEST(CompressedDirect, CodecPayloadsEqualHost) {
  expectCodecMatchesHost({{"compressor", "fp16"}});
  expectCodecMatchesHost({{"compressor", "none"}});
  expectCodecMatchesHost({{"compressor", "topk"}, {"k", "37"}});
  expectCodecMatchesHost({{"compressor", "randomk"}, {"k", "41"}, {"seed", "3"}});
  expectCodecMatchesHost({{"compressor", "fp16"}, {"ef", "vanilla"}});
  expectCodecMatchesHost({{"compressor", "topk"}, {"k", "37"}, {"ef", "vanilla"}, {"momentum", "nesterov"}});
  expectCodecMatchesHost({{"compressor", "randomk"}, {"k", "41"}, {"momentum", "nesterov"}, {"momentum_mu", "0.5"}});
  expectCodecMatchesHost({{"compressor", "onebit"}, {"scaling", "true"}, {"ef", "vanilla"}});
  expectCodecMatchesHost({{"compressor", "onebit"}, {"scaling", "true"}, {"scale_block", "128"}, {"ef", "vanilla"}});
  expectCodecMatchesHost({{"compressor", "dithering"}, {"k", "5"}, {"seed", "2"}});
  expectCodecMatchesHost({{"compressor", "dithering"}, {"k", "5"}, {"dithering_normalize", "l2"}, {"ef", "vanilla"}});
  expectCodecMatchesHost({{"compressor", "dithering"},
                          {"k", "3"},
                          {"dithering_partition", "natural"},
                          {"dithering_normalize", "l2"},
                          {"momentum", "nesterov"}});
}

// The staged path is chosen, with its reason, without the claimed CUDA support (flat and
// two-level; with it, every registry compressor has a device form, L2 dithering included).
TEST(CompressedDirect, StagesWithoutCudaSupport) {
  struct Case {
    bool claim;
    Params params;
    std::string why;
  };
  const std::vector<Case> cases = {
      {false, {{"compressor", "fp16"}, {"ef", "none"}}, "UCX reports no CUDA memory support"},
      {false,
       {{"compressor", "dithering"}, {"k", "4"}, {"dithering_normalize", "l2"}, {"intra", "none"}},
       "UCX reports no CUDA memory support"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    World world(4);
    testing::runRanksWrapped(
        4,
        [&](runtime::Communicator& comm) {
          EXPECT_EQ(comm.transportMovesCuda(), c.claim);
          Opened opened;
          ASSERT_NO_FATAL_FAILURE(testing::expectStagesAndEqualsHost<CompressedTensor>(
              comm, c.params, c.why, *world.transports[comm.rank()], inputOf, opened, [&](CompressedTensor& t) {
                if (!c.claim) return;  // asked directly, the direct path is refused for the same reason
                Status direct = t.setDeviceKernels(opened.kernels);
                EXPECT_EQ(direct.code(), Code::kInvalidArgument) << direct.toString();
                EXPECT_NE(direct.message().find(c.why), std::string::npos) << direct.toString();
              }));
          EXPECT_EQ(opened.kernels->violations + opened.kernels->scans, 0);  // the kernels were never used
        },
        [](int rank) { return testing::onFakeHosts(rank, 2); }, world.wrapper(c.claim));
  }
}

}  // namespace
}  // namespace tsr
