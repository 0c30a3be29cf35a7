// The C API's argument checks (ranks as threads over real UCX): every bad argument is refused
// with a status and a tsr_last_error() naming the call, the argument and the value, before
// anything is sent, and the communicator goes on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "bindings/c/tests/c_ranks.h"
#include "tessera/tessera.h"

using tsr::ctest::lastError;
using tsr::ctest::runCRanks;

namespace {

bool says(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CApi, BadArgumentsAreNamed) {
  runCRanks(2, [](tsr_comm_t comm, int r) {
    float x[4] = {0};
    EXPECT_EQ(tsr_allreduce(comm, x, x, 4, static_cast<tsr_dtype_t>(42), TSR_SUM, nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("dtype 42"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_allreduce(comm, x, x, 4, TSR_FLOAT32, static_cast<tsr_op_t>(9), nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("op 9"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_allreduce(comm, nullptr, x, 4, TSR_FLOAT32, TSR_SUM, nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("NULL"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_broadcast(comm, x, x, 4, TSR_FLOAT32, 7, nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("root 7"), std::string::npos) << lastError();
    EXPECT_NE(lastError().find("rank " + std::to_string(r)), std::string::npos) << lastError();
    EXPECT_EQ(tsr_comm_rank(comm, nullptr), TSR_ERR_INVALID_ARGUMENT);
    // Any int reaches a tsr_dtype_t or tsr_op_t: 256 is not TSR_FLOAT32 with the high bits cut off.
    EXPECT_EQ(tsr_allreduce(comm, x, x, 4, static_cast<tsr_dtype_t>(256), TSR_SUM, nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("dtype 256"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_allreduce(comm, x, x, 4, TSR_FLOAT32, static_cast<tsr_op_t>(0x101), nullptr),
              TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("op 257"), std::string::npos) << lastError();
    // The bitwise ops take integers: on floats they are refused, naming both.
    EXPECT_EQ(tsr_allreduce(comm, x, x, 4, TSR_FLOAT32, TSR_BXOR, nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("op bxor is bitwise: it takes int32 and int64, not f32"), std::string::npos)
        << lastError();
    uint16_t halves[8] = {0};
    EXPECT_EQ(tsr_reduce_scatter(comm, halves, halves, 4, TSR_BFLOAT16, TSR_BAND, nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("reduce_scatter on rank " + std::to_string(r) + ": op band is bitwise"),
              std::string::npos)
        << lastError();
    EXPECT_EQ(tsr_send(comm, x, 4, static_cast<tsr_dtype_t>(-1), 1 - r, 0, nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("tsr_send: dtype -1"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_broadcast(comm, x, x, 4, static_cast<tsr_dtype_t>(0x104), 0, nullptr), TSR_ERR_INVALID_ARGUMENT);
    // An output that overlaps the input without being in place.
    float y[8] = {0};
    EXPECT_EQ(tsr_allreduce(comm, y, y + 3, 4, TSR_FLOAT32, TSR_SUM, nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("overlaps the input"), std::string::npos) << lastError();
    EXPECT_EQ(tsr_allgather(comm, y + 1, y, 4, TSR_FLOAT32, nullptr), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(lastError().find("overlaps the input"), std::string::npos) << lastError();
    // Bad arguments fail locally and leave the communicator usable; in place is fine.
    ASSERT_EQ(tsr_allreduce(comm, x, x, 4, TSR_FLOAT32, TSR_SUM, nullptr), TSR_OK) << lastError();
    y[4 * r] = static_cast<float>(r + 1);
    ASSERT_EQ(tsr_allgather(comm, y + 4 * r, y, 4, TSR_FLOAT32, nullptr), TSR_OK) << lastError();
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[4], 2.0f);
    // ... and on integers they reduce bit by bit (MPI_BOR; negative values keep their sign bit).
    int64_t bits[3] = {int64_t{1} << (40 + r), r ? -2 : 6, 0x0f0f};
    ASSERT_EQ(tsr_allreduce(comm, bits, bits, 3, TSR_INT64, TSR_BOR, nullptr), TSR_OK) << lastError();
    EXPECT_EQ(bits[0], (int64_t{1} << 40) | (int64_t{1} << 41));
    EXPECT_EQ(bits[1], -2);
    EXPECT_EQ(bits[2], 0x0f0f);
    int32_t flips[2] = {r ? 0x00ff : 0x0ff0, -1};
    ASSERT_EQ(tsr_allreduce(comm, flips, flips, 2, TSR_INT32, TSR_BXOR, nullptr), TSR_OK) << lastError();
    EXPECT_EQ(flips[0], 0x0f0f);
    EXPECT_EQ(flips[1], 0);
  });
  EXPECT_EQ(tsr_comm_rank(nullptr, nullptr), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(tsr_wait(nullptr), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(tsr_comm_init_config(nullptr, nullptr, 0), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("NULL"), std::string::npos) << lastError();
}

TEST(CApi, UnknownOrBadConfigKeysAreNamed) {
  tsr_comm_t comm = nullptr;
  tsr_param_t unknown[] = {{"rank", "0"}, {"size", "1"}, {"timeout_mz", "5"}};
  EXPECT_EQ(tsr_comm_init_config(&comm, unknown, 3), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("timeout_mz"), std::string::npos) << lastError();
  tsr_param_t bad[] = {{"rank", "0"}, {"size", "1"}, {"TSR_TIMEOUT_MS", "soon"}};
  EXPECT_EQ(tsr_comm_init_config(&comm, bad, 3), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("soon"), std::string::npos) << lastError();
  EXPECT_EQ(comm, nullptr);
}

// Counts past 2^40 (a negative number cast to size_t) and keys given twice are refused when the
// handle is made (they were taken: a wrapped count failed only at the first step, a vector of
// SIZE_MAX elements threw out as TSR_ERR_INTERNAL, and the last of two keys won unseen).
TEST(CApi, HandleCountsAndParamsAreChecked) {
  runCRanks(2, [](tsr_comm_t comm, int) {
    const size_t huge = std::numeric_limits<size_t>::max();
    tsr_tensor_t t = nullptr;
    EXPECT_EQ(tsr_tensor_create(comm, "w", huge, TSR_FLOAT32, nullptr, 0, &t), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(says(lastError(), "tensor w: count 18446744073709551615 is too large")) << lastError();
    tsr_param_t twice[] = {{"algorithm", "marsit"}, {"algorithm", "spardl"}};
    EXPECT_EQ(tsr_tensor_create(comm, "w", 4, TSR_FLOAT32, twice, 2, &t), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(says(lastError(), "param 1: key 'algorithm' is given twice ('marsit', then 'spardl')")) << lastError();
    EXPECT_EQ(t, nullptr);

    tsr_selsync_t sync = nullptr;
    size_t hugeBucket[] = {4, huge};
    EXPECT_EQ(tsr_selsync_create(comm, nullptr, 0, hugeBucket, 2, &sync), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(says(lastError(), "tsr_selsync_create: bucket 1 count 18446744073709551615 is too large"))
        << lastError();
    tsr_param_t deltaTwice[] = {{"delta", "0.1"}, {"delta", "0.2"}};
    size_t four[] = {4};
    EXPECT_EQ(tsr_selsync_create(comm, deltaTwice, 2, four, 1, &sync), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(says(lastError(), "key 'delta' is given twice")) << lastError();
    tsr_covap_t covap = nullptr;
    size_t empty[] = {4, 0};
    EXPECT_EQ(tsr_covap_create(comm, nullptr, 0, empty, 2, &covap), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(says(lastError(), "tsr_covap_create: bucket 1 has 0 elements")) << lastError();
    EXPECT_EQ(tsr_covap_create(comm, nullptr, 0, hugeBucket, 2, &covap), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(says(lastError(), "bucket 1 count")) << lastError();
    EXPECT_EQ(sync, nullptr);
    EXPECT_EQ(covap, nullptr);

    // A residual that is not finite is refused: each step adds it to the gradient, so every
    // later step would fail on it. The tensor keeps its residual and steps on.
    tsr_param_t marsit[] = {{"algorithm", "marsit"}};
    ASSERT_EQ(tsr_tensor_create(comm, "m", 8, TSR_FLOAT32, marsit, 1, &t), TSR_OK) << lastError();
    std::vector<float> residual(8, 0.25f);
    residual[3] = std::nanf("");
    EXPECT_EQ(tsr_tensor_set_residual(t, residual.data()), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(says(lastError(), "tensor m: residual[3] is nan")) << lastError();
    residual[3] = -INFINITY;
    EXPECT_EQ(tsr_tensor_set_residual(t, residual.data()), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(says(lastError(), "residual[3] is -inf")) << lastError();
    std::vector<float> held(8, 1.0f), grad(8, 1.0f);
    ASSERT_EQ(tsr_tensor_residual(t, held.data()), TSR_OK);
    EXPECT_EQ(held, std::vector<float>(8, 0.0f));
    EXPECT_EQ(tsr_tensor_allreduce(t, grad.data(), nullptr), TSR_OK) << lastError();
    EXPECT_EQ(tsr_tensor_destroy(t), TSR_OK);
  });
  tsr_comm_t comm = nullptr;
  tsr_param_t rankTwice[] = {{"rank", "0"}, {"size", "1"}, {"rank", "1"}};
  EXPECT_EQ(tsr_comm_init_config(&comm, rankTwice, 3), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(says(lastError(), "tsr_comm_init_config: param 2: key 'rank' is given twice")) << lastError();
  EXPECT_EQ(comm, nullptr);
}

}  // namespace
