#include "algorithms/compressed/compressed_hier.h"

#include <algorithm>
#include <cmath>

#include "algorithms/compressed/compressed_step.h"

namespace tsr::compressed {

namespace {

std::vector<uint64_t> scratchFor(const algorithms::Plan& plan) {
  return std::vector<uint64_t>((plan.scratchBytes + 7) / 8);
}

bool isCount(const std::string& k) {
  return !k.empty() && std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

Result<DataType> parseIntra(const std::string& value) {
  if (value == "none") return DataType::kF32;
  if (value == "fp16") return DataType::kF16;
  return Status(Code::kInvalidArgument, "intra=" + value + " is not accepted (none or fp16)");
}

compress::Params shardParams(const compress::Params& kv, size_t shardReal, size_t count) {
  compress::Params out = kv;
  auto kind = kv.find("compressor");
  auto k = out.find("k");
  if (kind == kv.end() || (kind->second != "topk" && kind->second != "randomk") || k == out.end() ||
      !isCount(k->second) || k->second.size() > 18 || count == 0)
    return out;  // ratios, other compressors, and bad values (the registry names them)
  const double whole = std::stod(k->second);
  const double share = std::ceil(whole * static_cast<double>(shardReal) / static_cast<double>(count));
  k->second = std::to_string(static_cast<uint64_t>(std::max(1.0, share)));
  return out;
}

Status setUpTwoLevel(CompressedState& s, algorithms::Team& comm, DataType intraType, const compress::Params& kv) {
  const std::string intraName = intraType == DataType::kF16 ? "fp16" : "none";
  const auto& grid = comm.torusGrid();
  if (grid.empty())
    return Status(Code::kNotSupported, "intra=" + intraName + " selects the two-level schedule, but this job of " +
                                           std::to_string(s.size) + " ranks has no host grid (" + comm.torusWhyNot() +
                                           "); leave intra out for the flat all-gather");
  auto h = std::make_shared<CompressedHier>();
  TSR_ASSIGN_OR_RETURN(h->place, algorithms::placeInGrid(grid, s.rank, s.size, "two-level compressed"));
  // Several hosts of one rank each get a grid of N's factors whose rows span hosts: the
  // "intra-host" average would cross the network.
  for (int q : h->place.rowRanks)
    if (comm.hostIdOf(q) != comm.hostIdOf(s.rank)) {
      int local = 0;
      for (int r = 0; r < s.size; ++r) local += comm.hostIdOf(r) == comm.hostIdOf(s.rank);
      return Status(Code::kNotSupported, "intra=" + intraName + " selects the two-level schedule, but rank " +
                                             std::to_string(s.rank) + "'s host holds " + std::to_string(local) +
                                             " rank(s) and its grid row spans hosts: nothing to average inside a "
                                             "host; leave intra out for the flat all-gather");
    }
  const size_t x = static_cast<size_t>(h->place.x);
  h->intraType = intraType;
  h->shardCount = (s.count + x - 1) / x;
  h->padded = h->shardCount * x;
  h->shardOffset = h->shardCount * static_cast<size_t>(h->place.col);
  h->shardReal = s.count > h->shardOffset ? std::min(h->shardCount, s.count - h->shardOffset) : 0;

  // The shard's compressor; the algorithm is named after column 0's, the same on every rank.
  auto shardCompressor = [&](size_t real) { return compress::createCompressor(shardParams(kv, real, s.count), real); };
  if (h->shardReal > 0) {
    TSR_ASSIGN_OR_RETURN(s.compressor, shardCompressor(h->shardReal));
  } else {
    TSR_RETURN_IF_ERROR(shardCompressor(1).status());  // bad parameters fail on every rank alike
  }
  const size_t real0 = std::min(h->shardCount, s.count);
  std::string name;
  if (h->place.col == 0 && s.compressor) {
    name = s.compressor->name();
  } else {
    TSR_ASSIGN_OR_RETURN(auto first, shardCompressor(std::max<size_t>(1, real0)));
    name = first->name();
  }
  s.algorithm = std::string(intraType == DataType::kF16 ? "compressed-2level-fp16:" : "compressed-2level:") + name;

  s.slotWords = 1 + (s.compressor ? (s.compressor->maxCompressedBytes() + 7) / 8 : 0);
  s.mine.assign(s.slotWords, 0);
  s.all.assign(s.slotWords * h->place.y, 0);
  s.decoded.resize(h->shardReal);
  s.sum.resize(h->shardReal);
  h->work.resize(s.count);
  h->intraResidual.assign(s.count, 0.0f);
  h->nextResidual.assign(s.count, 0.0f);
  if (intraType == DataType::kF16) h->dropped.assign(h->padded, 0.0f);
  h->intraBuffer.assign((h->padded * dataTypeSize(intraType) + 7) / 8, 0);
  h->shard.resize(h->shardReal);
  h->block.assign(h->shardCount, 0.0f);
  h->result.assign(h->padded, 0.0f);

  const auto& options = comm.denseOptions();
  TSR_ASSIGN_OR_RETURN(h->rowPlan, algorithms::rowAverageScatterPlan(s.rank, s.size, h->place, h->padded, intraType,
                                                                     options, "compressed-2level-intra"));
  TSR_ASSIGN_OR_RETURN(h->columnPlan,
                       algorithms::groupAllgatherPlan(s.rank, s.size, h->place.columnRanks, s.slotWords, DataType::kI64,
                                                      options, "compressed-2level-column"));
  TSR_ASSIGN_OR_RETURN(h->rowGatherPlan,
                       algorithms::groupAllgatherPlan(s.rank, s.size, h->place.rowRanks, h->shardCount, DataType::kF32,
                                                      options, "compressed-2level-row"));
  h->rowScratch = scratchFor(*h->rowPlan);
  h->columnScratch = scratchFor(*h->columnPlan);
  h->rowGatherScratch = scratchFor(*h->rowGatherPlan);
  s.hier = std::move(h);
  return Status::ok();
}

void twoLevelResidual(const CompressedState& s, float* out) {
  const CompressedHier& h = *s.hier;
  std::copy(h.intraResidual.begin(), h.intraResidual.end(), out);
  if (!s.compressor) return;
  auto e = s.compressor->feedbackError();
  const float x = static_cast<float>(h.place.x);
  for (size_t k = 0; k < e.size() && k < h.shardReal; ++k) out[h.shardOffset + k] += x * e[k];
}

}  // namespace tsr::compressed
