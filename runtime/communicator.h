// Communicator: a group of ranks that run collectives together.
//
// Creation is collective: every rank bootstraps (decentralized ring all-gather over TCP,
// runtime/bootstrap), exchanges its UCX address and host, connects endpoints and starts its
// progress thread. Collectives are non-blocking: each returns a Request; the blocking forms
// wait on it. All ranks must call collectives in the same order with matching arguments;
// when they do not, every rank gets TSR_ERR_MISMATCH. It is the algorithm families' Team
// (algorithms/team/team.h).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "algorithms/dense/dense_plans.h"
#include "algorithms/dense/dense_selector.h"
#include "algorithms/dense/shm_board_collective.h"
#include "algorithms/plan/task.h"
#include "algorithms/team/device_copier.h"
#include "algorithms/team/request.h"
#include "algorithms/team/team.h"
#include "base/dtype.h"
#include "runtime/bootstrap/hmac.h"
#include "runtime/bootstrap/launch_env.h"
#include "runtime/config.h"
#include "runtime/shm_path.h"
#include "transport/transport.h"

namespace tsr::transport {
class UcxTransport;
}
namespace tsr::runtime {

class Bootstrap;
class JoinListener;
class ProgressEngine;
struct Submission;
class ScratchPool;
class DenseStaging;
struct PinnedBuffers;
// What a staged collective on the shared-memory path takes before its place in the segment:
// the caller's stream's event and the pinned buffers (none for host buffers).
struct StagedInput {
  algorithms::CallerEvent after;
  std::shared_ptr<PinnedBuffers> pinned;
};

using algorithms::DenseSelector;
using algorithms::DeviceCopier;
using algorithms::Request;
using algorithms::RequestPtr;
using algorithms::TaskFactory;

// final: the runtime's own calls through Communicator& bind statically.
class Communicator final : public algorithms::Team {
 public:
  // From the process environment (tsrun, Open MPI, Slurm, torchrun variables).
  static Result<std::unique_ptr<Communicator>> createFromEnvironment();
  static Result<std::unique_ptr<Communicator>> create(const LaunchInfo& launch, const Config& config);
  // Tests: `wrap` gets the UCX transport once it is connected and returns the transport the
  // progress engine and every collective use (a decorator that records or alters what is
  // posted; it must forward to the one it got). transportMovesCuda() then asks the decorator.
  using TransportWrapper = std::function<std::unique_ptr<transport::Transport>(transport::Transport& ucx)>;
  static Result<std::unique_ptr<Communicator>> create(const LaunchInfo& launch, const Config& config,
                                                      TransportWrapper wrap);
  ~Communicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localRank() const { return localRank_; }
  int localSize() const { return localSize_; }
  const std::string& hostOf(int rank) const { return hosts_.at(rank); }
  const Config& config() const { return config_; }

  Result<RequestPtr> allreduce(const void* input, void* output, size_t count, DataType dtype, ReduceOp op);
  // The algorithms' allreduce (algorithms::Team): host buffers even while bufferMemory() is kCuda.
  Result<RequestPtr> hostAllreduce(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) override;
  Result<RequestPtr> allgather(const void* input, void* output, size_t countPerRank, DataType dtype);
  Result<RequestPtr> reduceScatter(const void* input, void* output, size_t countPerRank, DataType dtype, ReduceOp op);
  Result<RequestPtr> broadcast(const void* input, void* output, size_t count, DataType dtype, int root);
  Result<RequestPtr> barrier();
  // All-to-all with a count per pair (MPI_Alltoallv): this rank sends sendCounts[p] elements
  // from input + sendDispls[p] to rank p and receives recvCounts[p] from p at output +
  // recvDispls[p] (elements; arrays of size() entries). The ranks first agree on every count
  // and the dtype (an allgather, waited on here: a pair whose counts differ is named on every
  // rank, before any data moves), then the data goes peer to peer (communicator_alltoall.cc).
  Result<RequestPtr> alltoallv(const void* input, const size_t* sendCounts, const size_t* sendDispls, void* output,
                               const size_t* recvCounts, const size_t* recvDispls, DataType dtype);

  // Point-to-point (communicator_p2p.cc): only this rank and `peer` call these. A receive
  // takes the sender's messages of the same `tag` (0 .. 2^20-1) in the order they were sent,
  // as MPI's do; count and dtype must give the bytes the sender sent (else kMismatch on the
  // receiver, which breaks the communicator as a mismatched collective does). They hold no
  // place in the collectives' order and run beside them, with the same timeout and failure
  // handling. Host memory only.
  Result<RequestPtr> send(const void* input, size_t count, DataType dtype, int peer, uint32_t tag = 0);
  Result<RequestPtr> recv(void* output, size_t count, DataType dtype, int peer, uint32_t tag = 0);
  // Collectives and messages posted from now on fail with kTimeout (on every rank) when not
  // done within `ms` (> 0) of starting; the configured timeout until then.
  Status setTimeout(int ms);
  int timeoutMs() const { return timeoutMs_; }
  // Waits until everything this rank has posted has ended (done or failed): before a planned
  // shutdown, so that no peer's last collective is cut off. Ok, or what broke the communicator.
  Status drain();

  // Runs a custom collective (algorithms/plan/task.h): `make` is called on the progress
  // thread when the task starts and gets the transport, rank and its `seqSpan` sequence
  // numbers. Every rank must submit its tasks and collectives in the same order.
  // `keepAlive` (buffers, state) lives until the task no longer touches memory.
  Result<RequestPtr> submitTask(TaskFactory make, uint32_t seqSpan = 1,
                                std::shared_ptr<void> keepAlive = nullptr) override;
  // Runs a plan built outside the communicator (compressed collectives such as Marsit) on
  // input/output; rngSeed and rngStep key the plan's random merges. Same ordering rule.
  Result<RequestPtr> submitPlan(std::shared_ptr<const algorithms::Plan> plan, const void* input, void* output,
                                uint64_t rngSeed = 0, uint32_t rngStep = 0) override;
  // This communicator's ring order and chunking, for plan builders outside it.
  const algorithms::DenseOptions& denseOptions() const override { return dense_; }
  // The options of this communicator's own dense collectives (host buffers only): dense_
  // plus whether the ring reduces on arrival (TSR_ARRIVAL_REDUCE).
  const algorithms::DenseOptions& hostDenseOptions() const { return hostDense_; }
  // Hosts: hostOf(r) is rank r's hostname, hostIdOf(r) its machine identity (same value =
  // same machine).
  const std::string& hostIdOf(int rank) const override { return hostIds_.at(rank); }
  // The ring the ring algorithms use (topology/host_map.h ringOrder): ranks of one host
  // adjacent, ordered by locality inside a host.
  const std::vector<int>& ringOrder() const override { return dense_.order; }
  // The 2D torus (grid[row][col] = rank, a row per host) that TSR_ALGO=torus uses; empty when
  // the job has none (prime N, unequal hosts).
  const std::vector<std::vector<int>>& torusGrid() const override { return torusGrid_; }
  // Why the job has no torus (empty when it has one).
  const std::string& torusWhyNot() const override { return torusWhyNot_; }

  // The memory the caller's buffers live in, for the dense collectives that follow (host by
  // default). kCuda: each dense collective copies its device input to pinned host memory,
  // runs on the host and copies the result back (runtime/dense_staging.h; there is no device
  // reduction for dense plans); it needs a CUDA device (else NotSupported with the reason,
  // the setting unchanged). Tested with a fake copier; on a GPU: docs/gpu.md.
  Status setBufferMemory(transport::MemoryType memory);
  // kCuda through this copier instead of the CUDA one (tests: a host-memcpy fake device).
  Status useDeviceCopier(std::unique_ptr<DeviceCopier> copier);
  // What the calling thread's calls take: its own setting (setThreadBuffers), else the
  // communicator's.
  transport::MemoryType bufferMemory() const;
  // The caller's CUDA stream (a cudaStream_t) whose work each later dense collective on kCuda
  // buffers and each step of a memory=cuda tensor waits for before reading its input, through
  // an event recorded on it in the call, as ncclAllReduce's stream argument; null (the
  // default): the legacy default stream's work queued before the call.
  void setCallerStream(void* stream) { callerStream_ = stream; }
  void* callerStream() const override;  // the calling thread's (setThreadBuffers), else the above
  // For the calling thread only, until clearThreadBuffers: the memory type and stream of its
  // later calls here, in place of setBufferMemory's and setCallerStream's. For libraries that
  // post on a communicator other threads use too (a DDP hook, a metrics thread): a setting
  // changed around each call for all threads would reach another thread's call in between.
  // kCuda needs what setBufferMemory's does (NotSupported otherwise, nothing set).
  Status setThreadBuffers(transport::MemoryType memory, void* stream);
  void clearThreadBuffers();
  // Whether UCX reports CUDA memory support (ucp_context_query: UCS_MEMORY_TYPE_CUDA).
  bool transportMovesCuda() const override;
  // Run once by every thread before it drives UCX here (the progress thread, a waiting
  // caller): device tensors on the direct path bind their CUDA device this way
  // (algorithms::cudaThreadBinding), as UCX moves device memory only where a context is current.
  void bindTransportThreads(std::function<void()> bind) override;

  // Collective over this communicator (every rank calls it, in the same order as its other
  // collectives; blocking): the ranks of each color >= 0 get a communicator of their own,
  // ranked by key, ties by their rank here, as MPI_Comm_split and ncclCommSplit. A negative
  // color gives none (null). Nothing outside is asked: the members' bootstrap addresses
  // travel through this communicator, and the new one's secret and job id derive from this
  // one's (communicator_split.cc).
  Result<std::unique_ptr<Communicator>> split(int color, int key);
  // Called by every live rank after a failure (as ULFM's MPIX_Comm_shrink): revokes this
  // communicator (so every live rank leaves its calls and comes here), agrees with the other
  // live ranks on who is lost (shrink_agreement.h; a rank silent past the timeout is lost),
  // and, when the survivors are a majority, bootstraps them into a new communicator, ranked in
  // their old order, its secret derived from this one's and the lost set. Fails (kPeerFailed)
  // on a side of a partition that is not a majority, and (kTimeout) when the survivors do not
  // agree within twice the timeout. A survivor that dies after the agreement makes the
  // survivors' bootstrap fail: they agree again, up to 3 times (communicator_shrink.cc).
  Result<std::unique_ptr<Communicator>> shrink();
  // Collective over this communicator (every member calls it, in order with its collectives,
  // at a point of its choosing, e.g. between steps): the replacements that asked to join since
  // the last grow (join()) are let in. Returns the grown communicator (the members keep their
  // ranks, the replacements follow) or null when nobody was waiting (one small all-gather).
  // The first grow opens this rank's door for replacements at its first bootstrap address.
  // A replacement that vanishes makes the grow fail on every member within the timeout (at
  // least 5 s); this communicator stays usable (communicator_grow.cc).
  Result<std::unique_ptr<Communicator>> grow();
  // A replacement process (tsrun --respawn starts one with TSR_JOIN=1): dials the members at
  // their first bootstrap addresses (launch.peers but its own) with the job secret, waits
  // until the members' next grow() lets it in (at most TSR_BOOTSTRAP_TIMEOUT_MS) and returns
  // its communicator there.
  static Result<std::unique_ptr<Communicator>> join(const LaunchInfo& launch, const Config& config);
  static Result<std::unique_ptr<Communicator>> joinFromEnvironment();
  // For a communicator made by shrink() or grow() (or join()): how long the ranks took to
  // agree (on who is lost; on who joins, and telling them) and to bootstrap it; zeros else.
  struct Recovery {
    double agreementMs = 0;
    double bootstrapMs = 0;
  };
  const Recovery& recovery() const { return recovery_; }

  // Fails every pending and later collective on this rank and tells the peers.
  void abort(const std::string& why);
  // The same with kRevoked, on every live rank (MPI_Comm_revoke): pending and later calls fail
  // with kRevoked naming this rank (and `why`, said after it), here and on every peer that
  // hears of it.
  void revoke(const std::string& why = "");
  // Ok, or the error that made this communicator unusable.
  Status health() const;
  // The dense algorithm selection and its link model (cost_model.h), for tools and tests.
  const DenseSelector& selector() const { return *selector_; }
  // Where collectives' scratch comes from (registered with UCX), for tools and tests.
  const ScratchPool& scratchPool() const { return *scratchPool_; }
  // Bytes this rank has sent its peers so far: through the transport, and written into the
  // one-host shared-memory segment for them (shm, shm-staged).
  uint64_t bytesSent() const;
  // The name the one-host shared-memory segment had ("" when there is none; it is unlinked
  // once every rank has it mapped), for tools and tests.
  std::string shmSegmentName() const;
  // UCX's TCP send buffer and where its size came from, e.g. "32 KiB, sized to the probed
  // net link, 117.4 MB/s" (tools).
  std::string tcpSendBufferNote() const;

 private:
  Communicator() = default;
  // Creation (communicator_create.cc): init runs the phases in order, handing on a Creation.
  struct Creation;
  Status init(const LaunchInfo& launch, const Config& config, const TransportWrapper& wrap);
  Status takeSettings(const LaunchInfo& launch, const Config& config, Creation& c);
  Status openTransport(Creation& c);
  Status exchangeCards(const LaunchInfo& launch, Creation& c);
  Status planSchedules(Creation& c);
  Status connectPeers(Creation& c);
  Status startEngine(Creation& c, const TransportWrapper& wrap);
  transport::Transport& active() const;  // the wrapper if any, else UCX
  Status chooseLinks();                  // communicator_links.cc
  Status fitSendBufferToProbedLink(const std::vector<bool>& fastLocal);
  bool sameHostPeersUseTcp() const;                // loopback TCP, not shared memory, between same-host ranks
  Status sealDataPlane(const Digest& controlKey);  // TSR_SECURE=encrypt
  Status checkArgs(const char* what, const void* input, const void* output, size_t count, DataType dtype,
                   const ReduceOp* op, int root) const;
  using PlanKey = std::tuple<int, size_t, int, int, int>;
  Result<std::shared_ptr<const algorithms::Plan>> cachedPlan(const PlanKey& key);
  Result<RequestPtr> submit(std::shared_ptr<const algorithms::Plan> plan, const void* input, void* output,
                            uint64_t rngSeed = 0, uint32_t rngStep = 0);
  // A dense collective's plan on the caller's buffers (inBytes read, outBytes written):
  // submit() for host memory, staged through pinned host memory for device memory.
  Result<RequestPtr> submitDense(std::shared_ptr<const algorithms::Plan> plan, const void* input, size_t inBytes,
                                 void* output, size_t outBytes);
  // Numbers a submission (seq .. seq+seqSpan-1), announces it on the shared-memory board (if
  // any) as `call` by `route`, gives it a request and hands it to the engine.
  Result<RequestPtr> post(Submission s, uint32_t seqSpan, std::shared_ptr<void> keepAlive, algorithms::ShmRoute route,
                          const algorithms::ShmCall& call = {});
  // The one-host shared-memory path (communicator_shm.cc, shm_path.h): set up at creation;
  // viaShm posts a collective it serves, or returns none when the call goes as messages.
  Status setUpShmPath();
  std::optional<Result<RequestPtr>> viaShm(const algorithms::ShmCollectiveArgs& args);
  std::pair<size_t, size_t> shmBufferBytes(const algorithms::ShmCollectiveArgs& args) const;  // input, output
  std::shared_ptr<DenseStaging> deviceStaging();  // null while buffers are host memory
  bool stagesThisCall() const;                    // kCuda, and not inside hostAllreduce
  Status openStaging();                           // staging_ on the current CUDA device, once
  // staging_ through `copier` (`replace`: even when there is one).
  void installStaging(std::unique_ptr<DeviceCopier> copier, bool replace);
  Status memoryTypeRefused(transport::MemoryType memory) const;  // neither host nor CUDA
  // CUDA buffers: are they? Then the caller's event (callerEvent) and the pinned buffers.
  Result<StagedInput> prepareShmDevice(const algorithms::ShmCollectiveArgs& args);
  // The event of the caller's stream (setCallerStream; without one, the legacy default
  // stream) that a staged collective called now waits for. Errors name `what`.
  Result<algorithms::CallerEvent> callerEvent(DenseStaging& staging, const std::string& what);
  // Posts the call's task on host buffers: the caller's, or pinned copies of CUDA ones.
  Result<RequestPtr> postShm(const algorithms::ShmCollectiveArgs& args, ShmPath::Call call, StagedInput staged);
  // Plans with more scratch than this take it from scratchPool_ (registered, reused);
  // smaller ones get it with their executor's state.
  static constexpr size_t kPooledScratchFrom = 4096;

  int rank_ = 0, size_ = 1, localRank_ = 0, localSize_ = 1;
  // What split() builds a child's launch from: every rank's bootstrap host, a key derived from
  // the job secret (not the secret itself), the job id, and how many splits came before.
  std::vector<PeerAddress> launchPeers_;
  Digest splitKey_{};
  std::string jobId_, launchSource_;
  // A split's, shrink's or grow's job id: jobId_ + suffix while that is short, else a
  // fixed-length digest of it, so ids stay within the bootstrap's limit however many
  // recoveries chain (a shrink adds one hex digit per 4 ranks) and distinct as the full ones.
  Result<std::string> childJobId(const std::string& suffix) const;
  bool insecure_ = false;
  uint32_t splits_ = 0;
  uint32_t shrinks_ = 0;
  // Recovery messages from the engine (its onRecovery), read by shrink(). Declared before
  // engine_: it is stopped before these go.
  std::mutex recoveryMutex_;
  std::condition_variable recoveryCv_;
  std::vector<std::pair<int, std::string>> recoveryInbox_;
  std::vector<std::string> hosts_;
  std::vector<std::string> hostIds_;
  Config config_;
  algorithms::DenseOptions dense_;
  algorithms::DenseOptions hostDense_;       // dense_ for this communicator's own collectives (host buffers)
  std::vector<std::vector<int>> torusGrid_;  // empty when the job has no torus shape
  std::string torusWhyNot_;                  // why not, for the fallback message
  bool torusAcrossHosts_ = false;            // rows are hosts (several hosts, several ranks each)
  std::unique_ptr<DenseSelector> selector_;
  std::atomic<transport::MemoryType> bufferMemory_{
      transport::MemoryType::kHost};       // which algorithm serves each dense collective
  std::shared_ptr<DenseStaging> staging_;  // bufferMemory_ kCuda: the copier (guarded by mutex_)
  std::atomic<void*> callerStream_{nullptr};
  const uint64_t threadKey_ = newThreadKey();  // names this communicator in threads' settings
  static uint64_t newThreadKey();
  // The shared-memory path: its segment mapped while the engine runs (declared before it,
  // freed after).
  std::unique_ptr<ShmPath> shm_;

  std::unique_ptr<Bootstrap> bootstrap_;
  std::unique_ptr<transport::UcxTransport> transport_;
  std::string sendBufferWhy_;                      // where transport_'s TCP send buffer size came from
  double probedNetRate_ = 0;                       // bytes/s the probe measured on the network (0: not probed)
  std::unique_ptr<transport::Transport> wrapped_;  // tests only (create with a wrapper)
  // TSR_SECURE=encrypt: seals what the two above carry between hosts (sealed_transport.h).
  std::unique_ptr<transport::Transport> sealed_;
  std::unique_ptr<ProgressEngine> engine_;
  std::shared_ptr<ScratchPool> scratchPool_ = makeScratchPool();
  static std::shared_ptr<ScratchPool> makeScratchPool();

  // Growing (communicator_grow.cc): the job's join key (raw bytes) and first launch (this
  // rank's first bootstrap address, where replacements knock; no secret), handed down to the
  // communicators made from this one; the door, opened by the first grow of any of them and
  // shared by all (one port: a door opened by one that the others did not see would hold it).
  std::string joinKey_;
  std::string rootJobId_;
  LaunchInfo rootLaunch_;
  struct JoinDoor {
    std::mutex mutex;
    std::shared_ptr<JoinListener> listener;
  };
  std::shared_ptr<JoinDoor> joinDoor_ = std::make_shared<JoinDoor>();
  uint32_t grows_ = 0;
  Recovery recovery_;
  Status openJoinDoor();
  // The configuration of a communicator a shrink or grow makes: `base` with this timeout, and
  // a bootstrap bounded by it (at least 5 s), not the minute a job's first bootstrap allows:
  // a rank that dies after the agreement holds the others that long.
  static Result<Config> recoveryConfig(const Config& base, int64_t timeoutMs);
  void handDownElastic(Communicator& child) const;

  // One agreement and bootstrap of shrink(); *bootstrapFailed when the agreement held and the
  // bootstrap did not (a survivor died after it).
  // lateBy: how much later than this rank a live peer may start the agreement (it may still be
  // failing the previous attempt's bootstrap); a silent peer is lost at the timeout after that.
  Result<std::unique_ptr<Communicator>> shrinkOnce(bool* bootstrapFailed, std::chrono::milliseconds lateBy);

  Result<RequestPtr> postPointToPoint(bool isSend, void* buffer, size_t count, DataType dtype, int peer, uint32_t tag);

  std::mutex mutex_;  // guards seq_, plans_, staging_ and the message counts
  uint32_t seq_ = 0;
  std::atomic<int> timeoutMs_{0};  // set at creation from config_
  // Messages so far per (peer, tag): sent to it, received from it (the pair's p2p sequence).
  std::map<std::pair<int, uint32_t>, uint32_t> sentCount_, receivedCount_;
  std::map<PlanKey, std::shared_ptr<const algorithms::Plan>> plans_;
};

// Refuses to start a communicator the ordinary way (`call`, named in the message) in a process
// started to replace a failed rank (TSR_JOIN=1), which must join the running job instead.
Status refuseInitOfAReplacement(const Config& config, const std::string& call);

}  // namespace tsr::runtime
