#include "runtime/communicator.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/ranges.h>

#include "algorithms/dense/cost_model.h"
#include "base/logging.h"
#include "runtime/bootstrap/bootstrap.h"
#include "runtime/control_auth.h"
#include "runtime/launcher_watch.h"
#include "runtime/link_probe.h"
#include "runtime/local_topology.h"
#include "runtime/peer_card.h"
#include "runtime/progress_engine.h"
#include "runtime/scratch_pool.h"
#include "runtime/shm_segment.h"
#include "topology/host_map.h"
#include "topology/torus_schedule.h"
#include "transport/sealed_transport.h"
#include "transport/ucx_context.h"
#include "transport/ucx_transport.h"

namespace tsr::runtime {

namespace {
constexpr size_t kSealedChunkBytes = 128 * 1024;  // TSR_SECURE=encrypt's default chunk
enum PlanKind { kAllreducePlan, kAllgatherPlan, kReduceScatterPlan, kBroadcastPlan, kBarrierPlan };

// The network link rate the user gave (TSR_LINK_BW's net class), 0 if none. It sizes UCX's
// TCP send buffer, which UCX fixes when its context is created, before the probe could
// measure the link. A bad value is reported by chooseLinks.
double givenNetBandwidth(const Config& config) {
  if (config.get("TSR_LINK_BW").empty()) return 0;
  algorithms::LinkModel links;
  auto spec = algorithms::applyLinkBandwidth(config.get("TSR_LINK_BW"), links);
  return spec.isOk() && spec.value().netGiven ? links.net.bytesPerSec : 0;
}
}  // namespace

Result<std::unique_ptr<Communicator>> Communicator::createFromEnvironment() {
  EnvMap env = processEnvironment();
  TSR_ASSIGN_OR_RETURN(Config config, Config::fromEnvironment(env));
  TSR_ASSIGN_OR_RETURN(LaunchInfo launch, launchInfoFromEnv(env));
  return create(launch, config);
}

Result<std::unique_ptr<Communicator>> Communicator::create(const LaunchInfo& launch, const Config& config) {
  return create(launch, config, nullptr);
}

Result<std::unique_ptr<Communicator>> Communicator::create(const LaunchInfo& launch, const Config& config,
                                                           TransportWrapper wrap) {
  std::unique_ptr<Communicator> comm(new Communicator());
  Status st = comm->init(launch, config, wrap);
  if (!st.isOk()) return st;
  return comm;
}

Status Communicator::init(const LaunchInfo& launch, const Config& config, const TransportWrapper& wrap) {
  rank_ = launch.rank;
  size_ = launch.size;
  localRank_ = launch.localRank;
  localSize_ = launch.localSize;
  config_ = config;
  log::configure({config.get("TSR_LOG_LEVEL"), config.get("TSR_LOG_FILE"), rank_, localHostname()});
  log::setThreadRank(rank_);  // ranks as threads share the loggers: this thread is this rank
  auto logger = log::get("runtime");
  for (const auto& w : config.warnings()) logger->warn("{}", w);
  watchLauncher(config.get("TSR_LAUNCHER_WATCH"), rank_, !config.get("TSR_LOG_FILE").empty());

  dense_.chunkBytes = static_cast<size_t>(config.getInt("TSR_CHUNK_BYTES"));
  // Sealing and opening a chunk is work on the pipeline's path: smaller chunks overlap it with
  // the network (4 MiB at 1 Gbit/s on 4 emulated hosts: 2% slower than unsealed, not 11%).
  if (config.get("TSR_SECURE") == "encrypt" && !config.isSet("TSR_CHUNK_BYTES")) dense_.chunkBytes = kSealedChunkBytes;
  dense_.window = static_cast<int>(config.getInt("TSR_WINDOW"));

  Status topoError;
  LocalPlacement placed = setUpLocalTopology(config, rank_, localRank_, localSize_, localHostname(), &topoError);
  TSR_RETURN_IF_ERROR(topoError);
  logger->debug("rank {}: {}", rank_, placed.description);
  const double netRate = givenNetBandwidth(config);
  TSR_ASSIGN_OR_RETURN(transport_, transport::UcxTransport::create(
                                       rank_, size_, netRate > 0 ? transport::tcpSendBufferFor(netRate) : 0));
  sendBufferWhy_ = netRate > 0 ? "sized to TSR_LINK_BW's net rate" : "the default";
  PeerCard mine{transport_->localAddress(),
                localHostname(),
                localHostId(config.get("TSR_TEST_HOST_ID")),
                placed.numaNode,
                placed.locality,
                std::string(kControlNonceBytes, '\0')};
  TSR_RETURN_IF_ERROR(randomBytes(reinterpret_cast<uint8_t*>(mine.controlNonce.data()), kControlNonceBytes));
  std::vector<std::string> blobs{mine.encode()};
  if (size_ > 1) {
    BootstrapOptions options;
    options.timeoutMs = config.bootstrapTimeoutMs();
    TSR_ASSIGN_OR_RETURN(bootstrap_, Bootstrap::create(launch, options));
    TSR_ASSIGN_OR_RETURN(blobs, bootstrap_->allGather(mine.encode()));
  }
  // Every rank has the same cards (the all-gather is authenticated), so the same key.
  TSR_ASSIGN_OR_RETURN(Digest controlKey, deriveControlKey(launch.secret, launch.jobId, blobs));
  std::vector<std::string> addresses;
  std::vector<topology::RankPlacement> placements;
  for (int r = 0; r < size_; ++r) {
    TSR_ASSIGN_OR_RETURN(PeerCard card, PeerCard::decode(blobs[r], r));
    addresses.push_back(card.transportAddress);
    hosts_.push_back(card.hostname);
    hostIds_.push_back(card.hostId);
    topology::RankPlacement p;
    p.rank = r;
    p.hostname = card.hostname;
    p.hostId = card.hostId;
    p.numaNode = card.numaNode;
    p.locality = card.locality;
    placements.push_back(p);
  }
  // The ring every ring algorithm uses: one host after the other, by locality inside a host.
  TSR_ASSIGN_OR_RETURN(topology::HostMap hostMap, topology::buildHostMap(placements));
  dense_.order = topology::ringOrder(hostMap);
  auto shape = topology::torusShape(hostMap);
  auto layout =
      shape.isOk() ? topology::torusLayout(hostMap, shape.value()) : Result<topology::TorusLayout>(shape.status());
  if (layout.isOk())
    torusGrid_ = layout.value().grid;
  else
    torusWhyNot_ = layout.status().message();
  torusAcrossHosts_ = layout.isOk() && shape.value().hostAxis;
  // The communicator's own dense collectives (host buffers) may reduce on arrival; decided
  // from the host map, which every rank has, so the ring's plans agree everywhere. Not
  // denseOptions(): the compressed algorithms also run plans on device buffers.
  const std::string arrival = config.get("TSR_ARRIVAL_REDUCE");
  bool hostPerRank = static_cast<int>(hostMap.hosts.size()) == size_;
  hostDense_ = dense_;
  hostDense_.reduceOnArrival = arrival == "on" || (arrival == "auto" && hostPerRank);
  algorithms::SelectorSetup setup{rank_, size_, hostDense_, torusGrid_, torusWhyNot_, {}, config.get("TSR_ALGO")};
  setup.shape.size = size_;
  setup.shape.hosts = static_cast<int>(hostMap.hosts.size());
  for (int n : hostMap.localSize) setup.shape.ranksPerHost = std::max(setup.shape.ranksPerHost, n);
  setup.shape.hostGrid = torusAcrossHosts_;
  selector_ = std::make_unique<DenseSelector>(std::move(setup));
  logger->debug("ring order: {} ({} host crossings)", fmt::join(dense_.order, " "),
                topology::hostCrossings(hostMap, dense_.order));
  // Same-host peers: UCX shared memory (no UCX peer-failure mode there) unless
  // TSR_ERR_MODE=peer; failures are then caught by the neighbour watch and timeouts.
  std::vector<bool> fastLocal(size_, false);
  if (config.get("TSR_ERR_MODE") == "auto")
    for (int r = 0; r < size_; ++r) fastLocal[r] = r != rank_ && hostIds_[r] == hostIds_[rank_];
  transport_->setPeerHosts(hosts_);
  TSR_RETURN_IF_ERROR(transport_->connect(addresses, fastLocal));
  TSR_RETURN_IF_ERROR(transport_->settle(config.bootstrapTimeoutMs()));
  TSR_RETURN_IF_ERROR(chooseLinks());
  TSR_RETURN_IF_ERROR(fitSendBufferToProbedLink(fastLocal));
  // Scratch (staging chunks, work copies) is reused every step: register it with UCX once.
  std::shared_ptr<transport::RegisteredMemory> registered = transport_->registeredMemory();
  scratchPool_ = std::make_shared<ScratchPool>(std::make_shared<const ScratchMemory>(
      ScratchMemory{"ucp_mem_map", [registered](size_t bytes) { return registered->allocate(bytes); },
                    [registered](void* block) { registered->release(block); }}));
  TSR_RETURN_IF_ERROR(setUpShmBoard());
  // Nobody leaves creation before every rank has connected: a rank that destroyed its
  // communicator at once would otherwise pull its shared-memory segment from under a peer
  // still attaching to it (UCX "shmat failed", seen with 6 ranks as threads).
  if (bootstrap_) TSR_RETURN_IF_ERROR(bootstrap_->barrier());
  EngineOptions engine;
  engine.timeoutMs = config.timeoutMs();
  engine.spinUs = static_cast<int>(config.getInt("TSR_SPIN_US"));
  engine.callerProgress = config.get("TSR_CALLER_PROGRESS") == "1";
  // Waiting ranks sleep on UCX's events only where every peer's messages raise one: not
  // over UCX's shared memory (TSR_WAIT).
  const std::string wait = config.get("TSR_WAIT");
  bool sharedMemoryPeers = std::find(fastLocal.begin(), fastLocal.end(), true) != fastLocal.end();
  engine.sleepWhileWaiting = wait == "sleep" || (wait == "auto" && !sharedMemoryPeers);
  logger->debug("rank {}: waits by {} (TSR_WAIT={})", rank_, engine.sleepWhileWaiting ? "sleeping" : "spinning", wait);
  engine.hosts = hosts_;
  engine.controlKey = controlKey;
  if (bootstrap_) engine.neighbourSockets = bootstrap_->neighbourSockets();
  engine.expectedSendRates.assign(size_, 0.0);  // links to other hosts, at the net figure
  for (int r = 0; r < size_; ++r)
    if (hostIds_[r] != hostIds_[rank_]) engine.expectedSendRates[r] = selector_->links().net.bytesPerSec;
  if (wrap) wrapped_ = wrap(*transport_);
  if (config.get("TSR_SECURE") == "encrypt") TSR_RETURN_IF_ERROR(sealDataPlane(controlKey));
  engine_ = std::make_unique<ProgressEngine>(active(), engine);
  logger->info("communicator ready: rank {} of {} on {} (launched by {})", rank_, size_, hosts_[rank_], launch.source);
  return Status::ok();
}

// Per-link keys, one per direction, from the communicator's control key (which only the job's
// ranks can derive, fresh for each communicator): K(a->b) = HMAC(key, "tsr-data" | a | b).
Status Communicator::sealDataPlane(const Digest& controlKey) {
  std::vector<transport::LinkKeys> keys(size_);
  std::vector<bool> sealed(size_, false);
  auto linkKey = [&](int from, int to) -> Result<transport::LinkKey> {
    std::string a = std::to_string(from), b = std::to_string(to);
    TSR_ASSIGN_OR_RETURN(Digest d, hmacSha256(asView(controlKey), {"tsr-data", a, "->", b}));
    transport::LinkKey k;
    std::copy(d.begin(), d.end(), k.begin());
    return k;
  };
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || hostIds_[r] == hostIds_[rank_]) continue;  // same machine: never on a wire
    sealed[r] = true;
    TSR_ASSIGN_OR_RETURN(keys[r].send, linkKey(rank_, r));
    TSR_ASSIGN_OR_RETURN(keys[r].recv, linkKey(r, rank_));
  }
  sealed_ = std::make_unique<transport::SealedTransport>(active(), keys, std::move(sealed), hosts_);
  log::get("runtime")->info("rank {}: data plane sealed with AES-256-GCM (TSR_SECURE=encrypt)", rank_);
  return Status::ok();
}

transport::Transport& Communicator::active() const {
  if (sealed_) return *sealed_;
  if (wrapped_) return *wrapped_;
  return *transport_;
}

bool Communicator::transportMovesCuda() const {
  return transport_ && active().supportsMemoryType(transport::MemoryType::kCuda);
}

void Communicator::bindTransportThreads(std::function<void()> bind) {
  if (transport_) transport_->setThreadBinding(std::move(bind));
}

std::shared_ptr<ScratchPool> Communicator::makeScratchPool() { return std::make_shared<ScratchPool>(); }

Communicator::~Communicator() {
  // Order matters: stop the thread, then close endpoints (their callbacks may still write
  // into the engine's completions), then free the engine.
  if (engine_) engine_->stop();
  wrapped_.reset();
  transport_.reset();
  sealed_.reset();  // after the transport: its pending operations' completions live here
  engine_.reset();
}

Status Communicator::checkArgs(const char* what, const void* input, const void* output, size_t count, DataType dtype,
                               const ReduceOp* op, int root) const {
  auto where = [&] { return std::string(what) + " on rank " + std::to_string(rank_) + ": "; };  // errors only
  if (!isValidDataType(static_cast<int>(dtype)))
    return Status(Code::kInvalidArgument, where() + "invalid dtype " + std::to_string(static_cast<int>(dtype)));
  if (op && !isValidReduceOp(static_cast<int>(*op)))
    return Status(Code::kInvalidArgument, where() + "invalid op " + std::to_string(static_cast<int>(*op)));
  if (count > 0 && input == nullptr && (root < 0 || root == rank_))
    return Status(Code::kInvalidArgument, where() + "input buffer is NULL with count " + std::to_string(count));
  if (count > 0 && output == nullptr)
    return Status(Code::kInvalidArgument, where() + "output buffer is NULL with count " + std::to_string(count));
  if (count > (size_t{1} << 40))
    return Status(Code::kInvalidArgument, where() + "count " + std::to_string(count) + " is too large");
  return Status::ok();
}

Result<std::shared_ptr<const algorithms::Plan>> Communicator::cachedPlan(const PlanKey& key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
  }
  auto [kind, count, dtypeInt, opInt, root] = key;
  auto dtype = static_cast<DataType>(dtypeInt);
  auto op = static_cast<ReduceOp>(opInt);
  Result<std::shared_ptr<algorithms::Plan>> plan = Status(Code::kInternal, "no plan");
  switch (kind) {
    case kAllreducePlan:
      plan = selector_->allreduce(count, dtype, op);
      break;
    case kAllgatherPlan:
      plan = selector_->allgather(count, dtype);
      break;
    case kReduceScatterPlan:
      plan = algorithms::ringReduceScatterPlan(rank_, size_, count, dtype, op, hostDense_);
      break;
    case kBroadcastPlan:
      plan = algorithms::binomialBroadcastPlan(rank_, size_, root, count, dtype, dense_);
      break;
    case kBarrierPlan:
      plan = algorithms::disseminationBarrierPlan(rank_, size_);
      break;
  }
  if (!plan.isOk()) return plan.status();
  std::shared_ptr<const algorithms::Plan> shared = plan.take();
  std::lock_guard<std::mutex> lock(mutex_);
  if (plans_.size() > 256) plans_.clear();  // bounded: trainers reuse a few shapes
  plans_[key] = shared;
  return shared;
}

Result<RequestPtr> Communicator::submitPlan(std::shared_ptr<const algorithms::Plan> plan, const void* input,
                                            void* output, uint64_t rngSeed, uint32_t rngStep) {
  if (!plan) return Status(Code::kInvalidArgument, "submitPlan on rank " + std::to_string(rank_) + ": no plan");
  return submit(std::move(plan), input, output, rngSeed, rngStep);
}

Result<RequestPtr> Communicator::submit(std::shared_ptr<const algorithms::Plan> plan, const void* input, void* output,
                                        uint64_t rngSeed, uint32_t rngStep) {
  // Small scratch comes with the executor's own state (RunBuffers::scratch); larger from
  // the pool of registered memory, reused across steps.
  std::shared_ptr<void> scratch;
  if (plan->scratchBytes > kPooledScratchFrom) {
    TSR_ASSIGN_OR_RETURN(scratch, scratchPool_->acquire(plan->scratchBytes));
  }
  Submission s;
  // Host buffers: device buffers of dense collectives reach here staged (submitDense), and a
  // barrier has none, whatever setBufferMemory said.
  s.buffers = algorithms::RunBuffers{input,   output, scratch.get(), transport::MemoryType::kHost, rngSeed, rngStep,
                                     nullptr, {},     nullptr};
  std::string algorithm = plan->algorithm;
  algorithms::ShmCall call{static_cast<uint8_t>(plan->collective), static_cast<uint8_t>(plan->dtype),
                           static_cast<uint8_t>(plan->op), plan->count, plan->root};
  s.plan = std::move(plan);
  auto posted = post(std::move(s), 1, std::move(scratch), algorithms::ShmRoute::kPlan, call);
  if (posted.isOk()) posted.value()->setAlgorithm(std::move(algorithm));
  return posted;
}

Result<RequestPtr> Communicator::submitTask(TaskFactory make, uint32_t seqSpan, std::shared_ptr<void> keepAlive) {
  if (seqSpan == 0 || seqSpan > 1024)
    return Status(Code::kInvalidArgument, "a task takes 1..1024 sequence numbers, not " + std::to_string(seqSpan));
  Submission s;
  s.make = std::move(make);
  return post(std::move(s), seqSpan, std::move(keepAlive), algorithms::ShmRoute::kTask);
}

Result<RequestPtr> Communicator::post(Submission s, uint32_t seqSpan, std::shared_ptr<void> keepAlive,
                                      algorithms::ShmRoute route, const algorithms::ShmCall& call) {
  s.keepAlive = std::move(keepAlive);
  s.request = std::make_shared<Request>();
  s.seqSpan = seqSpan;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    s.seq = seq_;
    seq_ += seqSpan;
  }
  if (shmSegment_) shmBoard_.announce(rank_, s.seq, route, call);
  RequestPtr request = s.request;
  engine_->submit(std::move(s));
  return request;
}

Result<RequestPtr> Communicator::allreduce(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) {
  TSR_RETURN_IF_ERROR(checkArgs("allreduce", input, output, count, dtype, &op, -1));
  if (auto shm = viaShm({input, output, count, dtype, op, false})) return std::move(*shm);
  TSR_ASSIGN_OR_RETURN(auto plan, cachedPlan({kAllreducePlan, count, int(dtype), int(op), -1}));
  size_t bytes = count * dataTypeSize(dtype);
  return submitDense(std::move(plan), input, bytes, output, bytes);
}

Result<RequestPtr> Communicator::allgather(const void* input, void* output, size_t countPerRank, DataType dtype) {
  TSR_RETURN_IF_ERROR(checkArgs("allgather", input, output, countPerRank, dtype, nullptr, -1));
  if (auto shm =
          viaShm({input, output, countPerRank, dtype, ReduceOp::kSum, false, algorithms::CollectiveKind::kAllgather}))
    return std::move(*shm);
  TSR_ASSIGN_OR_RETURN(auto plan, cachedPlan({kAllgatherPlan, countPerRank, int(dtype), 0, -1}));
  size_t bytes = countPerRank * dataTypeSize(dtype);
  return submitDense(std::move(plan), input, bytes, output, bytes * size_);
}

Result<RequestPtr> Communicator::reduceScatter(const void* input, void* output, size_t countPerRank, DataType dtype,
                                               ReduceOp op) {
  TSR_RETURN_IF_ERROR(checkArgs("reduce_scatter", input, output, countPerRank, dtype, &op, -1));
  if (auto shm = viaShm({input, output, countPerRank, dtype, op, false, algorithms::CollectiveKind::kReduceScatter}))
    return std::move(*shm);
  TSR_ASSIGN_OR_RETURN(auto plan, cachedPlan({kReduceScatterPlan, countPerRank, int(dtype), int(op), -1}));
  size_t bytes = countPerRank * dataTypeSize(dtype);
  return submitDense(std::move(plan), input, bytes * size_, output, bytes);
}

Result<RequestPtr> Communicator::broadcast(const void* input, void* output, size_t count, DataType dtype, int root) {
  if (root < 0 || root >= size_)
    return Status(Code::kInvalidArgument, "broadcast on rank " + std::to_string(rank_) + ": root " +
                                              std::to_string(root) + " is not a rank of this " + std::to_string(size_) +
                                              "-rank communicator");
  TSR_RETURN_IF_ERROR(checkArgs("broadcast", input, output, count, dtype, nullptr, root));
  if (auto shm =
          viaShm({input, output, count, dtype, ReduceOp::kSum, false, algorithms::CollectiveKind::kBroadcast, root}))
    return std::move(*shm);
  TSR_ASSIGN_OR_RETURN(auto plan, cachedPlan({kBroadcastPlan, count, int(dtype), 0, root}));
  size_t bytes = count * dataTypeSize(dtype);
  return submitDense(std::move(plan), input, bytes, output, bytes);
}

Result<RequestPtr> Communicator::barrier() {
  if (shmSegment_ && shmAllowed_) return shmCollective({nullptr, nullptr, 0, DataType::kF32, ReduceOp::kSum, true});
  TSR_ASSIGN_OR_RETURN(auto plan, cachedPlan({kBarrierPlan, 0, 0, 0, -1}));
  return submit(std::move(plan), nullptr, nullptr);
}

void Communicator::abort(const std::string& why) {
  engine_->abort(Status(Code::kAborted, "rank " + std::to_string(rank_) + " aborted: " + why));
}

Status Communicator::health() const { return engine_->health(); }

uint64_t Communicator::bytesSent() const { return transport_->bytesSent() + shmBytes_.load(std::memory_order_relaxed); }

}  // namespace tsr::runtime
