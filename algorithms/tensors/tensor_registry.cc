#include "algorithms/tensors/tensor_registry.h"

#include <algorithm>
#include <atomic>
#include <sstream>
#include <type_traits>

#include "algorithms/compressed/compressed_tensor.h"
#include "algorithms/marsit/marsit.h"
#include "algorithms/plan/step_kernels.h"
#include "algorithms/spardl/spardl.h"
#include "algorithms/team/device_path.h"
#include "algorithms/team/first_step_agreement.h"
#include "algorithms/team/result_scale.h"
#include "base/logging.h"

namespace tsr::algorithms {
namespace {

bool isFloating(DataType t) {
  return t == DataType::kF32 || t == DataType::kF64 || t == DataType::kF16 || t == DataType::kBF16;
}

// algorithm=dense: the team's allreduce of the buffer, nothing kept between steps.
class DenseTensor final : public Tensor {
 public:
  DenseTensor(Team& team, std::string name, size_t count, DataType dtype, ReduceOp result)
      : team_(team), name_(std::move(name)), count_(count), dtype_(dtype), result_(result) {}
  const std::string& algorithm() const override { return algorithm_; }
  ReduceOp result() const override { return result_; }
  Result<RequestPtr> allreduceAsync(void* data) override {
    auto posted = team_.hostAllreduce(data, data, count_, dtype_, result_);
    if (posted.isOk()) {
      pending_ = posted.value();
      ++posted_;
    }
    return posted;
  }
  uint64_t steps() const override {
    // A posted step counts once it has finished without error.
    const uint64_t posted = posted_;
    return posted - (pending_ && !pending_->test().isOk() ? 1 : 0);
  }
  bool busy() const override { return false; }  // nothing kept back between steps
  void residual(float* out) const override { std::fill(out, out + count_, 0.0f); }
  Status setResidual(const float* values) override {
    if (std::all_of(values, values + count_, [](float v) { return v == 0.0f; })) return Status::ok();
    return Status(Code::kInvalidArgument,
                  "tensor " + name_ + ": algorithm=dense keeps no residual, so only zeros can be set");
  }

 private:
  Team& team_;
  std::string name_;
  const std::string algorithm_ = "dense";
  size_t count_;
  DataType dtype_;
  ReduceOp result_;
  std::atomic<uint64_t> posted_{0};
  RequestPtr pending_;  // the last step posted
};

// Marsit, compressed and SparDL tensors: their classes share these calls.
template <typename Family>
class FamilyTensor final : public Tensor {
 public:
  FamilyTensor(std::unique_ptr<Family> family, ReduceOp result) : family_(std::move(family)), result_(result) {}
  const std::string& algorithm() const override { return family_->algorithm(); }
  ReduceOp result() const override { return result_; }
  Result<RequestPtr> allreduceAsync(void* data) override { return family_->allreduceAsync(static_cast<float*>(data)); }
  uint64_t steps() const override { return family_->step(); }
  bool busy() const override { return family_->busy(); }
  void residual(float* out) const override {
    if constexpr (std::is_same_v<Family, spardl::SparDLTensor>)
      std::copy(family_->residual().begin(), family_->residual().end(), out);
    else
      family_->residual(out);
  }
  Status setResidual(const float* values) override { return family_->setResidual(values); }
  std::vector<StepPart> lastStep() const override {
    if constexpr (std::is_same_v<Family, marsit::MarsitTensor>) {
      const marsit::StepTimes& t = family_->lastTimes();
      return {{"prepare", t.prepare},
              {"pack", t.pack},
              {"wire", t.wire},
              {"merge", t.merge},
              {"decompress", t.decompress},
              {"compensate", t.compensate},
              {"total", t.total}};
    } else if constexpr (std::is_same_v<Family, spardl::SparDLTensor>) {
      const spardl::StepStats& s = family_->lastStats();
      return {{"select", s.select}, {"merge", s.merge}, {"local", s.local},
              {"wire", s.wire},     {"total", s.total}, {"result_nonzeros", static_cast<double>(s.resultNonZeros)}};
    } else {
      return {};
    }
  }
  std::map<std::string, double> settings() const override {
    if constexpr (std::is_same_v<Family, marsit::MarsitTensor>)
      return {{"momentum", family_->momentum()}, {"scale_span", static_cast<double>(family_->scaleSpan())}};
    else
      return {};
  }

 private:
  std::unique_ptr<Family> family_;
  ReduceOp result_;
};

// memory=cuda: Marsit (ring, torus) and flat compressed tensors may take the direct device
// path (device_path.h), SparDL stages. Errors come prefixed by `caller`.
template <typename Family>
Status placeOnDevice(Team& team, Family& family, const TensorSpec& spec, const std::string& caller) {
  DeviceOpeners open = cudaDeviceOpeners(spec.name, spec.count);
  auto prefixed = [&](const Status& st) { return Status(st.code(), caller + ": " + st.message()); };
  if constexpr (std::is_same_v<Family, spardl::SparDLTensor>) {
    auto staging = open.staging();
    if (!staging.isOk()) return prefixed(staging.status());
    TSR_RETURN_IF_ERROR(family.setStaging(staging.value()));
    const bool moves = team.transportMovesCuda();
    const std::string noDirect = "algorithm=spardl has no device step";
    log::get("runtime")->info("tensor {}: memory=cuda on {}: {}", spec.name, staging.value()->copier().describe(),
                              devicePathNote(chooseDevicePath(moves, noDirect), moves, noDirect));
  } else {
    auto placed = family.useDeviceMemory(open);
    if (!placed.isOk()) return prefixed(placed.status());
    // Device buffers go to UCX: whichever thread drives it needs this device's context.
    if (team.transportMovesCuda()) team.bindTransportThreads(cudaThreadBinding());
  }
  return Status::ok();
}

// Makes the family's tensor from the algorithm's own keys, then memory= and op=.
template <typename Family>
Result<std::unique_ptr<Tensor>> makeFamily(Team& team, const TensorSpec& spec,
                                           const std::map<std::string, std::string>& kv, bool cuda,
                                           const std::string& op, const std::string& caller, const std::string& who) {
  TSR_ASSIGN_OR_RETURN(auto family, Family::create(team, spec.name, spec.count, kv));
  if (cuda) TSR_RETURN_IF_ERROR(placeOnDevice(team, *family, spec, caller));
  // SparDL computes the sum, the others the average; the other kind is scaled by the ranks
  // inside the step (result_scale.h).
  const ReduceOp native = std::is_same_v<Family, spardl::SparDLTensor> ? ReduceOp::kSum : ReduceOp::kAvg;
  ReduceOp result = op.empty() ? native : op == "sum" ? ReduceOp::kSum : ReduceOp::kAvg;
  if (result != native) {
    Status st = family->setResultScale(native == ReduceOp::kSum ? ResultScale::kOverRanks : ResultScale::kTimesRanks);
    if (!st.isOk()) return Status(st.code(), who + ": op=" + op + ": " + st.message());
  }
  // What the ranks' tensors must share, compared at the first step. The name is a label of
  // this process (a replacement rank's hooks may number theirs apart), and memory= may differ.
  std::string settings = "count=" + std::to_string(spec.count) + "; op=" + (result == ReduceOp::kSum ? "sum" : "avg") +
                         "; " + family->settingsText();
  auto agreement =
      makeSettingsAgreement(team, std::move(settings),
                            "every rank must create a tensor alike (count, algorithm, its parameters and op=) and step "
                            "its tensors in the same order");
  if (!agreement.isOk()) return Status(agreement.status().code(), who + ": " + agreement.status().message());
  family->setAgreement(agreement.take());
  return std::unique_ptr<Tensor>(new FamilyTensor<Family>(std::move(family), result));
}

}  // namespace

const std::vector<TensorAlgorithmInfo>& tensorAlgorithms() {
  static const char* kMarsitKeys =
      "topology=ring|torus seed full_precision_every intra=none|fp16 pack=chunked|whole momentum scale_block";
  static const char* kCompressedKeys =
      "compressor=onebit|topk|randomk|dithering|fp16|bf16|none k scaling scale_block ef=vanilla|none "
      "momentum=nesterov|none momentum_mu optimizer_momentum seed intra=none|fp16";
  static const std::vector<TensorAlgorithmInfo> table = {
      {"dense", "plain allreduce of the whole buffer (any floating dtype)", ""},
      {"marsit", "sign-bit allreduce (Sign Bit is Enough; float32)", kMarsitKeys},
      {"compressed", "any compressor of the registry, all-gathered and averaged (BytePS compression; float32)",
       kCompressedKeys},
      {"spardl", "sparse-block allreduce for any number of ranks (SparDL; float32; the sum)",
       "density teams sag=auto|r|b"},
      {"marsit-torus", "Marsit on the host grid's 2D torus", kMarsitKeys, "marsit", "topology=torus"},
      {"marsit-2level", "Marsit across hosts on each rank's shard of its host's f32 average", kMarsitKeys, "marsit",
       "intra=none"},
      {"marsit-2level-fp16", "marsit-2level with the host average summed in float16", kMarsitKeys, "marsit",
       "intra=fp16"},
      {"topk", "top-k with error feedback, all-gathered (k = 1% by default; SparDL's baseline)", kCompressedKeys,
       "compressed", "compressor=topk", "k=0.01"},
      {"topk-2level", "topk across hosts on each rank's shard of its host's f32 average", kCompressedKeys, "compressed",
       "compressor=topk intra=none", "k=0.01"},
      {"topk-2level-fp16", "topk-2level with the host average summed in float16", kCompressedKeys, "compressed",
       "compressor=topk intra=fp16", "k=0.01"},
      // Unscaled, onebit sends +-1 per element, a unit gradient everywhere that SGD at a usual
      // learning rate does not survive; scaled by the mean |g| it keeps the gradient's size. One
      // scale per 4096 elements and the momentum hand-off make it train under SGD with momentum
      // 0.9 (docs/convergence.md); optimizer_momentum=0 for an optimizer without momentum.
      {"onebit", "sign bits scaled by the mean |g| of each 4096 elements, with error feedback (1-bit SGD)",
       kCompressedKeys, "compressed", "compressor=onebit", "scaling=true scale_block=4096 optimizer_momentum=0.9"},
  };
  return table;
}

const TensorAlgorithmInfo* findTensorAlgorithm(const std::string& name) {
  for (const TensorAlgorithmInfo& a : tensorAlgorithms())
    if (name == a.name) return &a;
  return nullptr;
}

std::string tensorFamily(const std::string& name) {
  const TensorAlgorithmInfo* a = findTensorAlgorithm(name);
  if (!a) return "";
  return *a->base ? a->base : a->name;
}

Result<std::unique_ptr<Tensor>> makeTensor(Team& team, TensorSpec spec, const std::string& caller) {
  const std::string who = caller + ": tensor " + spec.name;
  auto invalid = [&](const std::string& what) { return Status(Code::kInvalidArgument, who + ": " + what); };
  auto notSupported = [&](const std::string& what) { return Status(Code::kNotSupported, who + ": " + what); };
  std::map<std::string, std::string> kv = std::move(spec.params);
  // memory=host|cuda: where this tensor's data lives (the caller's gradient buffer). Like a
  // framework tensor's device, it is declared once per tensor, not per communicator.
  bool cuda = false;
  if (auto m = kv.find("memory"); m != kv.end()) {
    if (m->second != "host" && m->second != "cuda")
      return invalid("memory=" + m->second + " is not accepted (host or cuda)");
    cuda = m->second == "cuda";
    kv.erase(m);
  }
  std::string op;
  if (auto o = kv.find("op"); o != kv.end()) {
    if (o->second != "avg" && o->second != "sum") return invalid("op=" + o->second + " is not accepted (avg or sum)");
    op = o->second;
    kv.erase(o);
  }
  const std::string asked = kv.count("algorithm") ? kv["algorithm"] : "dense";
  const TensorAlgorithmInfo* row = findTensorAlgorithm(asked);
  if (!row) {
    std::string names;
    for (const TensorAlgorithmInfo& a : tensorAlgorithms()) names += (names.empty() ? "" : ", ") + std::string(a.name);
    return invalid("algorithm=" + asked + " is not accepted (" + names + ")");
  }
  // A preset: its own keys (a caller's other value is refused), its defaults under the
  // caller's keys, then its family.
  auto pairs = [](const char* text) {
    std::vector<std::pair<std::string, std::string>> out;
    std::istringstream in(text);
    for (std::string pair; in >> pair;) {
      const size_t eq = pair.find('=');
      out.emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
    }
    return out;
  };
  for (const auto& [k, v] : pairs(row->fixed)) {
    if (auto given = kv.find(k); given != kv.end() && given->second != v)
      return invalid("algorithm=" + asked + " sets " + k + "=" + v + ", not " + k + "=" + given->second +
                     "; use algorithm=" + row->base + " with " + k + "=" + given->second);
    kv[k] = v;
  }
  for (const auto& [k, v] : pairs(row->defaults)) kv.emplace(k, v);
  const std::string algorithm = tensorFamily(asked);
  if (*row->base) kv["algorithm"] = algorithm;
  if (algorithm == "dense") {
    for (const auto& [k, v] : kv)
      if (k != "algorithm") return invalid(k + "=" + v + " is not a parameter of algorithm=dense");
    if (cuda)
      return notSupported(
          "memory=cuda is not offered with algorithm=dense (a dense average of CUDA memory is the communicator's "
          "allreduce on TSR_MEM_CUDA buffers); use marsit, compressed or spardl, or memory=host");
    if (!isFloating(spec.dtype))
      return invalid(
          "algorithm=dense averages, so it needs a floating dtype (float32, float64, float16 or bfloat16), not " +
          std::string(dataTypeName(spec.dtype)));
    const ReduceOp result = op == "sum" ? ReduceOp::kSum : ReduceOp::kAvg;
    return std::unique_ptr<Tensor>(new DenseTensor(team, spec.name, spec.count, spec.dtype, result));
  }
  if (spec.dtype != DataType::kF32)
    return notSupported("algorithm=" + algorithm + " takes TSR_FLOAT32 (float32) only, not " +
                        dataTypeName(spec.dtype) + "; algorithm=dense takes any floating dtype");
  if (algorithm == "marsit") return makeFamily<marsit::MarsitTensor>(team, spec, kv, cuda, op, caller, who);
  if (algorithm == "compressed") return makeFamily<compressed::CompressedTensor>(team, spec, kv, cuda, op, caller, who);
  return makeFamily<spardl::SparDLTensor>(team, spec, kv, cuda, op, caller, who);
}

}  // namespace tsr::algorithms
