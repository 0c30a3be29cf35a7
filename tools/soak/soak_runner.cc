#include "tools/soak/soak_runner.h"

#include <malloc.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "runtime/config.h"
#include "runtime/scratch_pool.h"
#include "tools/soak/soak_values.h"

namespace tsr::tools::soak {

namespace {

using runtime::Communicator;
using runtime::RequestPtr;
using Clock = std::chrono::steady_clock;

// A collective's buffer. Large ones are mapped and unmapped directly, so the allocator keeps
// none of them after the collective: RSS then measures the library, not this tool's heap.
class Buffer {
 public:
  explicit Buffer(size_t bytes) : bytes_(bytes) {
    if (bytes_ >= kMapFrom) {
      void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) {
        std::fprintf(stderr, "tsr-soak: cannot map %zu bytes\n", bytes_);
        std::abort();
      }
      data_ = p;
      mapped_ = true;
    } else {
      heap_.resize(bytes_ + 1);  // never empty: a valid pointer for count 0
      data_ = heap_.data();
    }
  }
  ~Buffer() {
    if (mapped_) munmap(data_, bytes_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return data_; }

 private:
  static constexpr size_t kMapFrom = 64 * 1024;
  size_t bytes_;
  void* data_ = nullptr;
  bool mapped_ = false;
  std::vector<char> heap_;
};

struct Pending {
  Op op;
  std::unique_ptr<Buffer> input, output;  // output null: in place (or a barrier)
  RequestPtr request;
};

Result<RequestPtr> post(Communicator& comm, const Op& op, void* in, void* out) {
  switch (op.collective) {
    case Collective::kAllreduce:
      return comm.allreduce(in, out, op.count, op.dtype, op.op);
    case Collective::kAllgather:
      return comm.allgather(in, out, op.count, op.dtype);
    case Collective::kReduceScatter:
      return comm.reduceScatter(in, out, op.count, op.dtype, op.op);
    case Collective::kBroadcast:
      return comm.broadcast(in, out, op.count, op.dtype, op.root);
    case Collective::kBarrier:
      return comm.barrier();
  }
  return Status(Code::kInternal, "unknown collective");
}

std::string where(int rank, const Op& op, const Setup& setup, const std::string& served) {
  return "rank " + std::to_string(rank) + ", op " + std::to_string(op.index) + ": " + describeOp(op) + ", setup " +
         setup.name + " (TSR_ALGO=" + setup.algo + ")" + (served.empty() ? "" : ", algorithm " + served);
}

std::string number(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

// Samples this rank's figures (after giving the allocator's free memory back, so RSS counts
// what is held, not what glibc keeps cached).
Sample sample(uint64_t at, int64_t shmBaseline, const std::vector<Communicator*>& comms = {}) {
  malloc_trim(0);
  Sample s{at, readFigures(shmBaseline)};
  for (const Communicator* c : comms) {
    s.figures.poolIdleKiB += static_cast<int64_t>(c->scratchPool().idleBytes() / 1024);
    s.figures.poolBlocks += static_cast<int64_t>(c->scratchPool().blocksAllocated());
  }
  return s;
}

// When the next sample is due: every `interval`, and once at the end of warm-up.
uint64_t nextSampleAt(uint64_t done, uint64_t interval, uint64_t warmupEnd) {
  uint64_t next = (done / interval + 1) * interval;
  return done < warmupEnd ? std::min(next, warmupEnd) : next;
}

}  // namespace

Result<std::unique_ptr<Communicator>> createCommunicator(const Setup* setup, const SoakOptions& options) {
  runtime::EnvMap env = runtime::processEnvironment();
  if (!env.count("TSR_TIMEOUT_MS")) env["TSR_TIMEOUT_MS"] = std::to_string(options.timeoutMs);
  TSR_ASSIGN_OR_RETURN(runtime::LaunchInfo launch, runtime::launchInfoFromEnv(env));
  if (setup) {
    env["TSR_ALGO"] = setup->algo;
    if (setup->ranksPerHost > 0)
      env["TSR_TEST_HOST_ID"] = "soak-host-" + std::to_string(launch.rank / setup->ranksPerHost);
    else
      env.erase("TSR_TEST_HOST_ID");
  }
  TSR_ASSIGN_OR_RETURN(runtime::Config config, runtime::Config::fromEnvironment(env));
  return Communicator::create(launch, config);
}

void runMixed(const std::vector<Communicator*>& comms, const std::vector<Setup>& setups, const SoakOptions& options,
              RankRecord* record) {
  PhaseRecord& phase = record->mixed;
  const int rank = comms.front()->rank(), size = comms.front()->size();
  OpGenerator generator(options.seed, size, options.maxBytes, options.inflight, setups);
  const uint64_t interval = std::max<uint64_t>(1, options.ops / static_cast<uint64_t>(options.samples));
  phase.warmupEnd = options.ops * static_cast<uint64_t>(options.warmupPct) / 100;
  phase.samples.push_back(sample(0, std::numeric_limits<int64_t>::max(), comms));
  const int64_t shmBaseline = phase.samples.front().figures.shmEntries;
  uint64_t due = nextSampleAt(0, interval, phase.warmupEnd);
  bool planted = false;
  auto t0 = Clock::now();
  while (phase.done < options.ops && record->failure.empty()) {
    std::vector<Pending> pending;
    for (const Op& op : generator.nextBurst(options.ops - phase.done)) {
      Pending p;
      p.op = op;
      const size_t esize = dataTypeSize(op.dtype);
      p.input = std::make_unique<Buffer>(inputCount(op, size) * esize);
      fillInput(op, size, rank, p.input->data());
      void* out = p.input->data();
      if (!op.inPlace) {
        p.output = std::make_unique<Buffer>(outputCount(op, size) * esize);
        std::memset(p.output->data(), kPoisonByte, outputCount(op, size) * esize);
        out = p.output->data();
      }
      auto req = post(*comms[op.setup], op, p.input->data(), out);
      if (!req.isOk()) {
        record->failure = where(rank, op, setups[op.setup], "") + ": could not post: " + req.status().toString();
        break;
      }
      p.request = req.value();
      pending.push_back(std::move(p));
    }
    // Every posted request is waited, even after a failure: its buffers live until then.
    for (Pending& p : pending) {
      Status st = p.request->wait();
      const Op& op = p.op;
      const std::string& served = p.request->algorithm();
      if (!record->failure.empty()) continue;
      if (!st.isOk()) {
        record->failure = where(rank, op, setups[op.setup], served) + ": failed: " + st.toString();
        continue;
      }
      record->served[std::string(collectiveName(op.collective)) + " on " + setups[op.setup].name + ": " +
                     (served.empty() ? "?" : served)]++;
      void* out = p.output ? p.output->data() : p.input->data();
      if (rank == options.plantWrongRank && op.index >= options.plantWrongOp && !planted && outputCount(op, size) > 0) {
        static_cast<unsigned char*>(out)[outputCount(op, size) / 2 * dataTypeSize(op.dtype)] ^= 0x40;
        planted = true;
      }
      if (op.collective != Collective::kBarrier)
        if (auto bad = findMismatch(op, size, rank, out))
          record->failure = "WRONG RESULT: " + where(rank, op, setups[op.setup], served) + ", element " +
                            std::to_string(bad->element) + ": expected " + number(bad->expected) + ", got " +
                            number(bad->got);
      ++phase.done;
      phase.bytes += largestBufferBytes(op, size);
    }
    pending.clear();  // the burst's buffers go before the figures are read
    if (!record->failure.empty()) break;
    if (phase.done >= due || phase.done == options.ops) {
      phase.samples.push_back(sample(phase.done, shmBaseline, comms));
      due = nextSampleAt(phase.done, interval, phase.warmupEnd);
    }
  }
  phase.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
}

void runCycles(const std::vector<Setup>& setups, const SoakOptions& options, int rank, int size, RankRecord* record) {
  PhaseRecord& phase = record->cycles;
  const uint64_t interval = std::max<uint64_t>(1, options.cycles / static_cast<uint64_t>(options.samples));
  phase.warmupEnd = options.cycles * static_cast<uint64_t>(options.cycleWarmupPct) / 100;
  phase.samples.push_back(sample(0, std::numeric_limits<int64_t>::max()));
  const int64_t shmBaseline = phase.samples.front().figures.shmEntries;
  uint64_t due = nextSampleAt(0, interval, phase.warmupEnd);
  auto t0 = Clock::now();
  for (uint64_t c = 0; c < options.cycles; ++c) {
    const Setup& setup = setups[c % setups.size()];
    Op op;  // the checked allreduce: a few elements, keyed by the cycle
    op.index = c;
    op.collective = Collective::kAllreduce;
    op.dtype = DataType::kI32;
    op.op = ReduceOp::kSum;
    op.count = 1 + c % 1000;
    op.salt = static_cast<uint32_t>(c * 2654435761u);
    std::string what = "rank " + std::to_string(rank) + ", cycle " + std::to_string(c) + ", setup " + setup.name;
    {
      auto created = createCommunicator(&setup, options);
      if (!created.isOk()) {
        record->failure = what + ": cannot create the communicator: " + created.status().toString();
        break;
      }
      Communicator& comm = *created.value();
      std::vector<int32_t> in(op.count), out(op.count);
      fillInput(op, size, rank, in.data());
      auto barrier = comm.barrier();
      Status st = barrier.isOk() ? barrier.value()->wait() : barrier.status();
      auto req = st.isOk() ? comm.allreduce(in.data(), out.data(), op.count, op.dtype, op.op) : Result<RequestPtr>(st);
      if (st.isOk()) st = req.isOk() ? req.value()->wait() : req.status();
      if (!st.isOk()) {
        record->failure = what + ": " + describeOp(op) + " failed: " + st.toString();
        break;
      }
      if (auto bad = findMismatch(op, size, rank, out.data())) {
        record->failure = "WRONG RESULT: " + what + ": " + describeOp(op) + ", element " +
                          std::to_string(bad->element) + ": expected " + number(bad->expected) + ", got " +
                          number(bad->got);
        break;
      }
    }  // destroyed here
    ++phase.done;
    if (phase.done >= due || phase.done == options.cycles) {
      phase.samples.push_back(sample(phase.done, shmBaseline));
      due = nextSampleAt(phase.done, interval, phase.warmupEnd);
    }
  }
  phase.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace tsr::tools::soak
