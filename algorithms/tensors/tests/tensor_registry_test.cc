// The tensor registry over real UCX (ranks as threads): every algorithm of the table is made by
// name and steps through the one Tensor interface with its own result kind; bad names, keys
// and dtypes are refused naming the caller, the tensor and what was wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "algorithms/tensors/tensor_registry.h"
#include "runtime/communicator.h"
#include "tests/support/thread_world.h"

namespace tsr::algorithms {
namespace {

TEST(TensorRegistry, TableNamesEachAlgorithmOnceDenseFirst) {
  const auto& table = tensorAlgorithms();
  ASSERT_FALSE(table.empty());
  EXPECT_STREQ(table[0].name, "dense");
  std::set<std::string> names;
  for (const auto& a : table) {
    EXPECT_TRUE(names.insert(a.name).second) << a.name;
    EXPECT_GT(std::string(a.description).size(), 10u) << a.name;
  }
  for (const char* name : {"marsit", "compressed", "spardl"}) EXPECT_TRUE(names.count(name)) << name;
  // A preset runs a family of the table, and tensorFamily says which.
  for (const auto& a : table) {
    if (!*a.base) {
      EXPECT_EQ(tensorFamily(a.name), a.name);
      continue;
    }
    EXPECT_TRUE(names.count(a.base)) << a.name;
    EXPECT_EQ(tensorFamily(a.name), a.base) << a.name;
    EXPECT_FALSE(std::string(a.fixed).empty()) << a.name;
  }
  EXPECT_EQ(tensorFamily("topk"), "compressed");
  EXPECT_EQ(tensorFamily("nope"), "");
}

TEST(TensorRegistry, EveryAlgorithmStepsThroughTheOneInterface) {
  const size_t count = 4096;
  testing::runRanks(2, [&](runtime::Communicator& comm) {
    for (const auto& a : tensorAlgorithms()) {
      if (*a.base) continue;  // presets: below
      TensorSpec spec{std::string("t-") + a.name, count, DataType::kF32, {{"algorithm", a.name}}};
      if (std::string(a.name) == "compressed") spec.params["compressor"] = "fp16";  // it has no default
      auto made = makeTensor(comm, spec, "test");
      ASSERT_TRUE(made.isOk()) << a.name << ": " << made.status().message();
      Tensor& t = *made.value();
      EXPECT_EQ(t.result(), std::string(a.name) == "spardl" ? ReduceOp::kSum : ReduceOp::kAvg) << a.name;
      std::vector<float> g(count);
      for (size_t j = 0; j < count; ++j) g[j] = std::sin(0.01f * static_cast<float>(j) * (comm.rank() + 1));
      auto posted = t.allreduceAsync(g.data());
      ASSERT_TRUE(posted.isOk()) << a.name << ": " << posted.status().message();
      ASSERT_TRUE(posted.value()->wait().isOk()) << a.name;
      EXPECT_EQ(t.steps(), 1u) << a.name;
      EXPECT_FALSE(t.busy()) << a.name;
      std::vector<float> r(count, 1.0f);
      t.residual(r.data());
      if (std::string(a.name) == "dense") {
        EXPECT_EQ(r, std::vector<float>(count, 0.0f));
      }
    }
    // op= flips the result kind.
    auto summed = makeTensor(comm, {"m-sum", count, DataType::kF32, {{"algorithm", "marsit"}, {"op", "sum"}}}, "test");
    ASSERT_TRUE(summed.isOk()) << summed.status().message();
    EXPECT_EQ(summed.value()->result(), ReduceOp::kSum);
  });
}

TEST(TensorRegistry, PresetsRunTheirFamilyWithTheirKeysAndReportTheirSteps) {
  const size_t count = 4096;
  testing::runRanks(2, [&](runtime::Communicator& comm) {
    auto topk = makeTensor(comm, {"t-topk", count, DataType::kF32, {{"algorithm", "topk"}}}, "test");
    ASSERT_TRUE(topk.isOk()) << topk.status().message();
    EXPECT_EQ(topk.value()->algorithm(), "compressed:ef(topk(k=41))");  // k = ceil(0.01 * 4096)
    auto denser = makeTensor(comm, {"t-topk5", count, DataType::kF32, {{"algorithm", "topk"}, {"k", "0.05"}}}, "test");
    ASSERT_TRUE(denser.isOk()) << denser.status().message();
    EXPECT_EQ(denser.value()->algorithm(), "compressed:ef(topk(k=205))");  // the caller's k wins
    auto onebit = makeTensor(comm, {"t-onebit", count, DataType::kF32, {{"algorithm", "onebit"}}}, "test");
    ASSERT_TRUE(onebit.isOk()) << onebit.status().message();
    EXPECT_NE(onebit.value()->algorithm().find("onebit"), std::string::npos) << onebit.value()->algorithm();
    // A preset's own key cannot change.
    auto other =
        makeTensor(comm, {"t-x", count, DataType::kF32, {{"algorithm", "topk"}, {"compressor", "randomk"}}}, "test");
    ASSERT_FALSE(other.isOk());
    EXPECT_NE(other.status().message().find("algorithm=topk sets compressor=topk, not compressor=randomk; use "
                                            "algorithm=compressed"),
              std::string::npos)
        << other.status().message();
    // Marsit reports its step's parts and the numbers a checker needs; dense reports none.
    auto marsit =
        makeTensor(comm, {"t-marsit", count, DataType::kF32, {{"algorithm", "marsit"}, {"momentum", "0.5"}}}, "test");
    ASSERT_TRUE(marsit.isOk()) << marsit.status().message();
    EXPECT_EQ(marsit.value()->settings().at("momentum"), 0.5);
    EXPECT_EQ(marsit.value()->settings().at("scale_span"), 4096.0);
    std::vector<float> g(count, comm.rank() + 1.0f);
    auto posted = marsit.value()->allreduceAsync(g.data());
    ASSERT_TRUE(posted.isOk() && posted.value()->wait().isOk());
    std::map<std::string, double> parts;
    for (const StepPart& p : marsit.value()->lastStep()) parts[p.name] = p.value;
    EXPECT_EQ(parts.size(), 7u);
    EXPECT_GT(parts["total"], 0.0);
    auto dense = makeTensor(comm, {"t-dense", count, DataType::kF32, {}}, "test");
    ASSERT_TRUE(dense.isOk());
    EXPECT_TRUE(dense.value()->lastStep().empty());
    EXPECT_TRUE(dense.value()->settings().empty());
  });
}

TEST(TensorRegistry, BadSpecsAreRefusedNamingWhatWasWrong) {
  testing::runRanks(1, [&](runtime::Communicator& comm) {
    auto expectRefused = [&](TensorSpec spec, Code code, const std::string& says) {
      auto made = makeTensor(comm, spec, "caller");
      ASSERT_FALSE(made.isOk()) << says;
      EXPECT_EQ(made.status().code(), code) << made.status().message();
      EXPECT_NE(made.status().message().find("caller: tensor " + spec.name + ": "), std::string::npos)
          << made.status().message();
      EXPECT_NE(made.status().message().find(says), std::string::npos) << made.status().message();
    };
    expectRefused({"a", 8, DataType::kF32, {{"algorithm", "marsitt"}}}, Code::kInvalidArgument,
                  "algorithm=marsitt is not accepted (dense, marsit, compressed, spardl, marsit-torus");
    expectRefused({"b", 8, DataType::kF32, {{"foo", "1"}}}, Code::kInvalidArgument,
                  "foo=1 is not a parameter of algorithm=dense");
    expectRefused({"c", 8, DataType::kF64, {{"algorithm", "spardl"}}}, Code::kNotSupported, "float32");
    expectRefused({"d", 8, DataType::kI32, {}}, Code::kInvalidArgument, "floating dtype");
    expectRefused({"e", 8, DataType::kF32, {{"memory", "gpu"}}}, Code::kInvalidArgument, "memory=gpu");
    expectRefused({"f", 8, DataType::kF32, {{"op", "max"}}}, Code::kInvalidArgument, "op=max");
    expectRefused({"g", 8, DataType::kF32, {{"memory", "cuda"}}}, Code::kNotSupported, "algorithm=dense");
  });
}

}  // namespace
}  // namespace tsr::algorithms
