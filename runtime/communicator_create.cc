// Creating a communicator (communicator.h): collective, as named phases in the order they run.
// Each phase's comment says what every rank has when it returns.
#include <algorithm>
#include <cstdlib>

#include <fmt/ranges.h>

#include "algorithms/dense/cost_model.h"
#include "base/logging.h"
#include "runtime/bootstrap/bootstrap.h"
#include "runtime/bootstrap/join_link.h"
#include "runtime/communicator.h"
#include "runtime/control_auth.h"
#include "runtime/launcher_watch.h"
#include "runtime/local_topology.h"
#include "runtime/peer_card.h"
#include "runtime/progress_engine.h"
#include "runtime/scratch_pool.h"
#include "topology/host_map.h"
#include "topology/torus_schedule.h"
#include "transport/sealed_transport.h"
#include "transport/ucx_context.h"
#include "transport/ucx_transport.h"

namespace tsr::runtime {

namespace {

constexpr size_t kSealedChunkBytes = 128 * 1024;  // TSR_SECURE=encrypt's default chunk

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

// What the phases hand on to the ones after them.
struct Communicator::Creation {
  LocalPlacement placed;
  std::vector<std::string> addresses;  // every rank's UCX address
  topology::HostMap hostMap;
  Digest controlKey{};
  std::vector<bool> fastLocal;  // peers reached over UCX's shared memory (no peer-failure mode)
};

Status refuseInitOfAReplacement(const Config& config, const std::string& call) {
  if (config.get("TSR_JOIN") != "1") return Status::ok();
  // Its bootstrap would wait for peers that started long ago, then time out saying nothing of why.
  return Status(Code::kInvalidArgument,
                call +
                    ": TSR_JOIN=1: this process was started to replace a failed rank (tsrun --respawn) of a job "
                    "that is running; it joins with tsr_comm_join (Python: Communicator.join(); torch: "
                    "tessera.torch.elastic), not " +
                    call);
}

Result<std::unique_ptr<Communicator>> Communicator::createFromEnvironment() {
  EnvMap env = processEnvironment();
  TSR_ASSIGN_OR_RETURN(Config config, Config::fromEnvironment(env));
  TSR_RETURN_IF_ERROR(refuseInitOfAReplacement(config, "Communicator::createFromEnvironment"));
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
  Creation c;
  TSR_RETURN_IF_ERROR(takeSettings(launch, config, c));
  TSR_RETURN_IF_ERROR(openTransport(c));
  TSR_RETURN_IF_ERROR(exchangeCards(launch, c));
  TSR_RETURN_IF_ERROR(planSchedules(c));
  TSR_RETURN_IF_ERROR(connectPeers(c));
  // Scratch (staging chunks, work copies) is reused every step: register it with UCX once.
  std::shared_ptr<transport::RegisteredMemory> registered = transport_->registeredMemory();
  scratchPool_ = std::make_shared<ScratchPool>(std::make_shared<const ScratchMemory>(
      ScratchMemory{"ucp_mem_map", [registered](size_t bytes) { return registered->allocate(bytes); },
                    [registered](void* block) { registered->release(block); }}));
  TSR_RETURN_IF_ERROR(setUpShmPath());
  // Nobody leaves creation before every rank has connected: a rank that destroyed its
  // communicator at once would otherwise pull its shared-memory segment from under a peer
  // still attaching to it (UCX "shmat failed", seen with 6 ranks as threads).
  if (bootstrap_) TSR_RETURN_IF_ERROR(bootstrap_->barrier());
  TSR_RETURN_IF_ERROR(startEngine(c, wrap));
  log::get("runtime")->info("communicator ready: rank {} of {} on {} (launched by {})", rank_, size_, hosts_[rank_],
                            launch.source);
  return Status::ok();
}

// Settings, logging and the launcher watch; this rank placed on its NUMA node (hwloc).
Status Communicator::takeSettings(const LaunchInfo& launch, const Config& config, Creation& c) {
  rank_ = launch.rank;
  size_ = launch.size;
  localRank_ = launch.localRank;
  localSize_ = launch.localSize;
  config_ = config;
  launchPeers_ = launch.peers;
  jobId_ = launch.jobId;
  launchSource_ = launch.source;
  insecure_ = launch.insecure;
  TSR_ASSIGN_OR_RETURN(splitKey_, hmacSha256(launch.secret, {"tsr-split-key", launch.jobId}));
  // The job's own launch: a communicator made from another gets its parent's (handDownElastic).
  TSR_ASSIGN_OR_RETURN(Digest join, joinKey(launch.secret, launch.jobId));
  joinKey_ = std::string(asView(join));
  rootJobId_ = launch.jobId;
  rootLaunch_ = launch;
  rootLaunch_.secret.clear();
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
  dense_.minMessageBytes = static_cast<size_t>(config.getInt("TSR_MIN_MESSAGE_BYTES"));

  Status topoError;
  c.placed = setUpLocalTopology(config, rank_, localRank_, localSize_, localHostname(), &topoError);
  TSR_RETURN_IF_ERROR(topoError);
  logger->debug("rank {}: {}", rank_, c.placed.description);
  return Status::ok();
}

// This rank's UCX worker, its TCP send buffer sized to TSR_LINK_BW's net rate when given
// (never below loopback's need when this rank's same-host peers talk TCP).
Status Communicator::openTransport(Creation&) {
  const double netRate = givenNetBandwidth(config_);
  size_t sendBuffer = netRate > 0 ? transport::tcpSendBufferFor(netRate) : 0;
  const bool floored =
      sendBuffer && localSize_ > 1 && sameHostPeersUseTcp() && sendBuffer < transport::kLoopbackTcpSendBuffer;
  if (floored) sendBuffer = transport::kLoopbackTcpSendBuffer;
  TSR_ASSIGN_OR_RETURN(transport_, transport::UcxTransport::create(rank_, size_, sendBuffer));
  sendBufferWhy_ = netRate <= 0 ? "the default"
                   : floored    ? "TSR_LINK_BW's net rate wants less; loopback TCP to same-host peers needs this much"
                                : "sized to TSR_LINK_BW's net rate";
  return Status::ok();
}

// Same-host peers go over TCP on loopback when UCX_TLS leaves UCX no shared memory, or when
// TSR_ERR_MODE=peer asks for UCX's peer-failure mode, which UCX's shared memory lacks.
bool Communicator::sameHostPeersUseTcp() const {
  return config_.get("TSR_ERR_MODE") == "peer" || !transport::ucxTlsHasSharedMemory(std::getenv("UCX_TLS"));
}

// The bootstrap's authenticated all-gather of every rank's card (UCX address, host, NUMA
// node, locality, control nonce): every rank then has the same hosts and the same control key.
Status Communicator::exchangeCards(const LaunchInfo& launch, Creation& c) {
  PeerCard mine{transport_->localAddress(), localHostname(),   localHostId(config_.get("TSR_TEST_HOST_ID")),
                c.placed.numaNode,          c.placed.locality, std::string(kControlNonceBytes, '\0'),
                config_.get("TSR_SECURE")};
  TSR_RETURN_IF_ERROR(randomBytes(reinterpret_cast<uint8_t*>(mine.controlNonce.data()), kControlNonceBytes));
  std::vector<std::string> blobs{mine.encode()};
  if (size_ > 1) {
    BootstrapOptions options;
    options.timeoutMs = config_.bootstrapTimeoutMs();
    TSR_ASSIGN_OR_RETURN(bootstrap_, Bootstrap::create(launch, options));
    TSR_ASSIGN_OR_RETURN(blobs, bootstrap_->allGather(mine.encode()));
  }
  // Every rank has the same cards (the all-gather is authenticated), so the same key.
  TSR_ASSIGN_OR_RETURN(c.controlKey, deriveControlKey(launch.secret, launch.jobId, blobs));
  std::vector<PeerCard> cards;
  for (int r = 0; r < size_; ++r) {
    TSR_ASSIGN_OR_RETURN(PeerCard card, PeerCard::decode(blobs[r], r));
    cards.push_back(std::move(card));
  }
  // Every rank has the same cards, so every rank fails here alike.
  if (std::string why = mismatchedSecurity(cards); !why.empty()) return Status(Code::kMismatch, why);
  std::vector<topology::RankPlacement> placements;
  for (int r = 0; r < size_; ++r) {
    const PeerCard& card = cards[r];
    c.addresses.push_back(card.transportAddress);
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
  TSR_ASSIGN_OR_RETURN(c.hostMap, topology::buildHostMap(placements));
  return Status::ok();
}

// From the host map every rank has, so the same everywhere: the ring order, the torus (or
// why there is none), and the dense selector with the job's shape.
Status Communicator::planSchedules(Creation& c) {
  const topology::HostMap& hostMap = c.hostMap;
  // The ring every ring algorithm uses: one host after the other, by locality inside a host.
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
  const std::string arrival = config_.get("TSR_ARRIVAL_REDUCE");
  bool hostPerRank = static_cast<int>(hostMap.hosts.size()) == size_;
  hostDense_ = dense_;
  hostDense_.reduceOnArrival = arrival == "on" || (arrival == "auto" && hostPerRank);
  algorithms::SelectorSetup setup{rank_, size_, hostDense_, torusGrid_, torusWhyNot_, {}, config_.get("TSR_ALGO")};
  setup.shape.size = size_;
  setup.shape.hosts = static_cast<int>(hostMap.hosts.size());
  for (int n : hostMap.localSize) setup.shape.ranksPerHost = std::max(setup.shape.ranksPerHost, n);
  setup.shape.hostGrid = torusAcrossHosts_;
  selector_ = std::make_unique<DenseSelector>(std::move(setup));
  log::get("runtime")->debug("ring order: {} ({} host crossings)", fmt::join(dense_.order, " "),
                             topology::hostCrossings(hostMap, dense_.order));
  return Status::ok();
}

// Endpoints to every peer, settled; the links measured (or given) for the cost model; the
// TCP send buffer refitted to a slow network link the probe found.
Status Communicator::connectPeers(Creation& c) {
  // Same-host peers: UCX shared memory (no UCX peer-failure mode there) unless
  // TSR_ERR_MODE=peer; failures are then caught by the neighbour watch and timeouts.
  c.fastLocal.assign(size_, false);
  if (config_.get("TSR_ERR_MODE") == "auto")
    for (int r = 0; r < size_; ++r) c.fastLocal[r] = r != rank_ && hostIds_[r] == hostIds_[rank_];
  transport_->setPeerHosts(hosts_);
  TSR_RETURN_IF_ERROR(transport_->connect(c.addresses, c.fastLocal));
  TSR_RETURN_IF_ERROR(transport_->settle(config_.bootstrapTimeoutMs()));
  TSR_RETURN_IF_ERROR(chooseLinks());
  return fitSendBufferToProbedLink(c.fastLocal);
}

// The progress engine over the transport collectives use (sealed with TSR_SECURE=encrypt, or
// a test's wrapper), with its timeouts, waiting mode and the neighbours it watches.
Status Communicator::startEngine(Creation& c, const TransportWrapper& wrap) {
  EngineOptions engine;
  engine.timeoutMs = config_.timeoutMs();
  timeoutMs_ = engine.timeoutMs;
  engine.spinUs = static_cast<int>(config_.getInt("TSR_SPIN_US"));
  engine.callerProgress = config_.get("TSR_CALLER_PROGRESS") == "1";
  // Waiting ranks sleep on UCX's events only where every peer's messages raise one: not
  // over UCX's shared memory (TSR_WAIT).
  const std::string wait = config_.get("TSR_WAIT");
  bool sharedMemoryPeers = std::find(c.fastLocal.begin(), c.fastLocal.end(), true) != c.fastLocal.end();
  engine.sleepWhileWaiting = wait == "sleep" || (wait == "auto" && !sharedMemoryPeers);
  log::get("runtime")->debug("rank {}: waits by {} (TSR_WAIT={})", rank_,
                             engine.sleepWhileWaiting ? "sleeping" : "spinning", wait);
  engine.hosts = hosts_;
  engine.controlKey = c.controlKey;
  if (bootstrap_) engine.neighbourSockets = bootstrap_->neighbourSockets();
  // Links to other hosts, at the net figure: a flow's share when every rank of this host
  // crosses at once over its NICs (the two-level plan does; 4 hosts of 2 ranks warned of
  // "slow" links at 2.6-3.1 MB/s of 12.6 with the whole link as the expectation).
  const auto& links = selector_->links();
  const auto ranksHere = std::count(hostIds_.begin(), hostIds_.end(), hostIds_[rank_]);
  const double flowShare = std::min(1.0, double(std::max(1, links.netNics)) / double(ranksHere));
  engine.expectedSendRates.assign(size_, 0.0);
  for (int r = 0; r < size_; ++r)
    if (hostIds_[r] != hostIds_[rank_]) engine.expectedSendRates[r] = links.net.bytesPerSec * flowShare;
  engine.onRecovery = [this](int from, const std::string& body) {
    std::lock_guard<std::mutex> lock(recoveryMutex_);
    recoveryInbox_.emplace_back(from, body);
    recoveryCv_.notify_all();
  };
  if (wrap) wrapped_ = wrap(*transport_);
  if (config_.get("TSR_SECURE") == "encrypt") TSR_RETURN_IF_ERROR(sealDataPlane(c.controlKey));
  engine_ = std::make_unique<ProgressEngine>(active(), engine);
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

}  // namespace tsr::runtime
