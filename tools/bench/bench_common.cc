#include "tools/bench/bench_common.h"

#include <algorithm>
#include <cstring>

namespace tsr::tools::bench {

Status waitFor(Result<runtime::RequestPtr> posted, std::string* algo) {
  if (!posted.isOk()) return posted.status();
  if (algo) *algo = posted.value()->algorithm();
  return posted.value()->wait();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t k = v.size();
  return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

Status stepOf(algorithms::Tensor& tensor, float* data) {
  auto posted = tensor.allreduceAsync(data);
  if (!posted.isOk()) return posted.status();
  return posted.value()->wait();
}

namespace {

uint64_t hashOf(const std::vector<float>& v) {  // FNV-1a over the bit patterns
  uint64_t h = 0xcbf29ce484222325ull;
  for (float x : v) {
    uint32_t w;
    std::memcpy(&w, &x, sizeof w);
    h = (h ^ w) * 0x100000001b3ull;
  }
  return h;
}

}  // namespace

Result<std::vector<bool>> differsAcrossRanks(runtime::Communicator& comm, const std::vector<float>& result) {
  const size_t d = result.size();
  uint64_t h = hashOf(result);
  int64_t mine[2] = {static_cast<int64_t>(h), static_cast<int64_t>(~h)}, most[2];
  TSR_RETURN_IF_ERROR(waitFor(comm.allreduce(mine, most, 2, DataType::kI64, ReduceOp::kMax)));
  std::vector<bool> differs;
  if (most[0] == ~most[1]) return differs;  // max(h) == min(h): all the same
  std::vector<float> lo(d), hi(d);
  TSR_RETURN_IF_ERROR(waitFor(comm.allreduce(result.data(), lo.data(), d, DataType::kF32, ReduceOp::kMin)));
  TSR_RETURN_IF_ERROR(waitFor(comm.allreduce(result.data(), hi.data(), d, DataType::kF32, ReduceOp::kMax)));
  differs.resize(d);
  for (size_t j = 0; j < d; ++j) differs[j] = std::memcmp(&lo[j], &hi[j], sizeof(float)) != 0;
  return differs;
}

Status keepSlowest(runtime::Communicator& comm, const TimedStep& step, const std::vector<double>& fields, bool timed,
                   SlowestRank& into) {
  std::vector<double> mine{step.us, step.sentBytes};
  mine.insert(mine.end(), fields.begin(), fields.end());
  std::vector<double> most(mine.size());
  TSR_RETURN_IF_ERROR(waitFor(comm.allreduce(mine.data(), most.data(), mine.size(), DataType::kF64, ReduceOp::kMax)));
  if (!timed) return Status();
  into.times.push_back(most[0]);
  into.maxWire = std::max(into.maxWire, most[1]);
  for (size_t f = 0; f < into.fields.size(); ++f) into.fields[f].push_back(most[2 + f]);
  return Status();
}

Status fillTimingColumns(runtime::Communicator& comm, const SlowestRank& slowest, int64_t wrong, bool checked,
                         BenchRow& row) {
  int64_t total = 0;
  TSR_RETURN_IF_ERROR(waitFor(comm.allreduce(&wrong, &total, 1, DataType::kI64, ReduceOp::kSum)));
  const std::vector<double>& times = slowest.times;
  row.itersUs = times;
  row.timeUs = median(times);
  row.minUs = *std::min_element(times.begin(), times.end());
  row.maxUs = *std::max_element(times.begin(), times.end());
  row.wireBytes = static_cast<uint64_t>(slowest.maxWire);
  row.wrong = checked ? total : -1;
  return Status();
}

}  // namespace tsr::tools::bench
