// tsr-sim's refusals: a job the runtime would refuse, or one tsr-sim cannot model, is a usage
// error naming the option and the value, never a ring simulated under another name.
#include <gtest/gtest.h>

#include <map>

#include "runtime/config.h"
#include "tools/sim/tests/sim_test_support.h"

namespace tsr::sim {
namespace {

// The message of validateJob's refusal ("" when the job is accepted).
std::string refusal(const SimJob& job) {
  Status s = validateJob(job);
  if (s.isOk()) return "";
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.message();
  return s.message();
}

TEST(SimJobChecks, UnknownAlgorithmsAreRefusedListingTheCollectivesOwn) {
  SimJob job = ringJob(4, size_t{1} << 20);
  job.algorithm = "rign";
  EXPECT_EQ(refusal(job),
            "--algo rign: accepted values for --collective allreduce are "
            "auto|ring|rabenseifner|doubling|torus|hier|marsit|marsit-torus|marsit-2level|spardl");
  EXPECT_FALSE(buildJobPlans(job).isOk());
  // Allreduce algorithms are not all-gathers (they were simulated as the ring all-gather, and
  // marsit added its scales' allreduce to it).
  job.collective = "allgather";
  for (const char* algo : {"torus", "rabenseifner", "marsit", "spardl", "hier", "shm"}) {
    job.algorithm = algo;
    EXPECT_EQ(refusal(job),
              std::string("--algo ") + algo + ": accepted values for --collective allgather are " + "auto|ring|bruck");
    EXPECT_FALSE(buildJobPlans(job).isOk()) << algo;
  }
  job.algorithm = "bruck";
  EXPECT_EQ(refusal(job), "");
  job.collective = "allreduce";
  EXPECT_NE(refusal(job).find("--algo bruck: accepted values for --collective allreduce"), std::string::npos);
  job.collective = "alltoall";
  EXPECT_EQ(refusal(job), "--collective alltoall: accepted values are allreduce|allgather");
}

TEST(SimJobChecks, EveryAcceptedAlgorithmBuildsItsOwnPlans) {
  for (const char* collective : {"allreduce", "allgather"}) {
    std::string names = simAlgorithms(collective);
    for (size_t at = 0; at <= names.size();) {
      size_t bar = std::min(names.find('|', at), names.size());
      SimJob job = ringJob(8, size_t{1} << 20);
      job.ranksPerHost = 2;  // a host grid, so torus, hier and the Marsit grids are built
      job.collective = collective;
      job.algorithm = names.substr(at, bar - at);
      auto plans = buildJobPlans(job);
      ASSERT_TRUE(plans.isOk()) << collective << " " << job.algorithm << ": " << plans.status().message();
      if (job.algorithm != "auto") {
        EXPECT_EQ(plans.value().algorithm, job.algorithm);
      }
      at = bar + 1;
    }
  }
}

TEST(SimJobChecks, ArrivalTakesItsDocumentedValuesOnly) {
  SimJob job = ringJob(4, size_t{1} << 20);
  for (const char* ok : {"auto", "on", "off"}) {
    job.arrival = ok;
    EXPECT_EQ(refusal(job), "") << ok;
  }
  for (const char* bad : {"yes", "1", "ON", ""}) {
    job.arrival = bad;
    EXPECT_EQ(refusal(job), std::string("--arrival ") + bad + ": accepted values are auto|on|off");
  }
}

// The runtime's ranges: a 0 chunk failed the replay with "more than N transfers in flight", a
// 100-byte one ran for minutes; a 0 minimum message was raised to 1 without a word.
TEST(SimJobChecks, ChunkAndMinimumMessageKeepToTheRuntimesRanges) {
  SimJob job = ringJob(4, size_t{1} << 20);
  job.chunkBytes = 0;
  EXPECT_EQ(refusal(job), "--chunk 0 B: accepted values are 1024..1073741824 B (TSR_CHUNK_BYTES)");
  EXPECT_FALSE(buildJobPlans(job).isOk());
  job.chunkBytes = 100;
  EXPECT_NE(refusal(job).find("--chunk 100 B: "), std::string::npos);
  job.chunkBytes = (size_t{1} << 30) + 1;
  EXPECT_NE(refusal(job).find("--chunk 1073741825 B: "), std::string::npos);
  for (size_t ok : {kMinChunkBytes, kMaxChunkBytes}) {
    job.chunkBytes = ok;
    EXPECT_EQ(refusal(job), "") << ok;
  }
  job.minMessageBytes = 0;
  EXPECT_EQ(refusal(job), "--min-message 0 B: accepted values are 1..1073741824 B (TSR_MIN_MESSAGE_BYTES)");
  job.minMessageBytes = 1;
  EXPECT_EQ(refusal(job), "");
}

// Marsit's step counted elements as bytes / 4 while its bit plan took bytes / dtype size: an f64
// or f16 Marsit modelled a step of two sizes. Marsit and SparDL take f32 only.
TEST(SimJobChecks, CompressedAlgorithmsTakeF32Only) {
  SimJob job = ringJob(8, size_t{1} << 20);
  job.ranksPerHost = 2;
  for (const char* algo : {"marsit", "marsit-torus", "marsit-2level", "spardl"}) {
    job.algorithm = algo;
    for (DataType t : {DataType::kF64, DataType::kF16, DataType::kBF16, DataType::kI32}) {
      job.dtype = t;
      EXPECT_EQ(refusal(job),
                std::string("--algo ") + algo + " takes --dtype f32 only, not --dtype " + dataTypeName(t));
      EXPECT_FALSE(buildJobPlans(job).isOk());
    }
    job.dtype = DataType::kF32;
    EXPECT_EQ(refusal(job), "") << algo;
    job.op = ReduceOp::kMax;
    EXPECT_NE(refusal(job).find(std::string("--algo ") + algo + " takes --op sum"), std::string::npos) << algo;
    job.op = ReduceOp::kSum;
  }
  job.algorithm = "spardl";
  job.density = 0;
  EXPECT_EQ(refusal(job), "--density 0: accepted values are in (0, 1]");
  job.algorithm = "ring";  // the dense plans take any dtype; a bitwise op takes integers
  job.dtype = DataType::kF64;
  EXPECT_EQ(refusal(job), "");
  job.op = ReduceOp::kBxor;
  EXPECT_EQ(refusal(job), "--op bxor is bitwise: it takes --dtype i32 or i64, not --dtype f64");
  job.dtype = DataType::kI64;
  EXPECT_EQ(refusal(job), "");
}

// tsr-sim's ranges are the runtime's, read from its settings table.
TEST(SimJobChecks, RangesAreTheRuntimeSettingsOwn) {
  std::map<std::string, std::string> accepted;
  for (const runtime::ConfigEntry& e : runtime::configTable()) accepted[e.name] = e.accepted;
  EXPECT_EQ(accepted["TSR_CHUNK_BYTES"], std::to_string(kMinChunkBytes) + ".." + std::to_string(kMaxChunkBytes));
  EXPECT_EQ(accepted["TSR_MIN_MESSAGE_BYTES"],
            std::to_string(kMinMessageFloor) + ".." + std::to_string(kMinMessageCeiling));
  EXPECT_EQ(accepted["TSR_ARRIVAL_REDUCE"], "auto|on|off");
}

}  // namespace
}  // namespace tsr::sim
