// Writes the binary seeds of fuzz/corpus/ (the text seeds are written by hand): frames and
// handshake messages from the real encoders, control notices, compressor payloads, and, for
// the task targets, what one rank receives when every rank of the job runs in this process
// over a loopback transport. Usage: make_seeds CORPUS_DIR
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz/compressor_pick.h"
#include "fuzz/jobs.h"
#include "fuzz/wire_keys.h"
#include "runtime/control_message.h"

using namespace tsr;
namespace fs = std::filesystem;

namespace {

fs::path root;

void write(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(root / target);
  std::ofstream(root / target / name, std::ios::binary) << bytes;
}

std::string bytesOf(const uint8_t* p, size_t n) { return std::string(reinterpret_cast<const char*>(p), n); }

// Every rank's transport: sends land in the peer's inbox, receives match (source, tag & mask).
// What each receive got is kept per rank, in the order the receives were posted.
struct World {
  struct Msg {
    int from;
    uint64_t tag;
    std::string bytes;
  };
  explicit World(int n) : inbox(n), received(n) {}
  std::vector<std::deque<Msg>> inbox;
  std::vector<std::vector<std::string>> received;
};

class LoopTransport final : public transport::Transport {
 public:
  LoopTransport(World& w, int rank) : w_(w), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(w_.inbox.size()); }
  const std::string& localAddress() const override { return address_; }
  Status connect(const std::vector<std::string>&) override { return Status::ok(); }
  Status send(int peer, uint64_t tag, const void* b, size_t bytes, transport::MemoryType,
              transport::Completion* c) override {
    w_.inbox[peer].push_back({rank_, tag, std::string(static_cast<const char*>(b), bytes)});
    *c = transport::Completion{};
    c->posted = c->done = true;
    return Status::ok();
  }
  Status recv(int peer, uint64_t tag, uint64_t mask, void* b, size_t bytes, transport::MemoryType,
              transport::Completion* c) override {
    *c = transport::Completion{};
    c->posted = true;
    pending_.push_back({peer, tag, mask, b, bytes, c, w_.received[rank_].size()});
    w_.received[rank_].emplace_back();
    return Status::ok();
  }
  void cancel(transport::Completion* c) override {
    for (auto it = pending_.begin(); it != pending_.end(); ++it)
      if (it->c == c) {
        c->done = true, c->status = Status(Code::kAborted, "cancelled");
        pending_.erase(it);
        return;
      }
  }
  bool progress() override {
    bool any = false;
    for (auto p = pending_.begin(); p != pending_.end();) {
      auto& box = w_.inbox[rank_];
      auto m = box.begin();
      while (m != box.end() && !(m->from == p->peer && (m->tag & p->mask) == (p->tag & p->mask))) ++m;
      if (m == box.end()) {
        ++p;
        continue;
      }
      if (m->bytes.size() > p->bytes) std::abort();  // the job's own ranks disagree
      std::memcpy(p->buffer, m->bytes.data(), m->bytes.size());
      p->c->done = true, p->c->bytes = m->bytes.size(), p->c->tag = m->tag;
      w_.received[rank_][p->slot] = m->bytes;
      box.erase(m);
      p = pending_.erase(p);
      any = true;
    }
    return any;
  }
  bool armEvents() override { return false; }
  void sleepUntilEvent(int) override {}
  void wake() override {}
  Status peerStatus(int) const override { return Status::ok(); }
  void markPeerLeft(int) override {}
  void abandonPendingOnClose() override {}
  void beginLeaving() override {}
  bool supportsMemoryType(transport::MemoryType t) const override { return t == transport::MemoryType::kHost; }
  uint64_t bytesSent() const override { return 0; }

 private:
  struct Pending {
    int peer;
    uint64_t tag, mask;
    void* buffer;
    size_t bytes;
    transport::Completion* c;
    size_t slot;
  };
  World& w_;
  int rank_;
  std::string address_;
  std::deque<Pending> pending_;
};

// Runs every rank of the job `head` describes; the seed is the head and what rank `rank`
// received, each message as fuzz_transport.h reads it (u16 length, bytes).
using MakeJob = std::unique_ptr<fuzz::Job> (*)(const uint8_t*, int);
void taskSeed(const std::string& target, const std::string& name, MakeJob make, std::vector<uint8_t> head) {
  auto first = make(head.data(), -1);
  if (!first) std::abort();
  const int n = first->size, me = first->rank;
  World world(n);
  std::vector<std::unique_ptr<fuzz::Job>> jobs;
  std::vector<std::unique_ptr<LoopTransport>> transports;
  std::vector<std::unique_ptr<algorithms::Task>> tasks;
  std::vector<Status> status;
  for (int r = 0; r < n; ++r) {
    jobs.push_back(make(head.data(), r));
    transports.push_back(std::make_unique<LoopTransport>(world, r));
    algorithms::TaskContext ctx{*transports[r], {r, 1, 1}, jobs[r]->seqSpan, n};
    tasks.push_back(jobs[r]->task(ctx));
  }
  for (int r = 0; r < n; ++r) status.push_back(tasks[r]->start());
  for (int round = 0;; ++round) {
    bool running = false;
    for (int r = 0; r < n; ++r) {
      if (status[r].code() != Code::kInProgress) continue;
      running = true;
      transports[r]->progress();
      status[r] = tasks[r]->progress();
    }
    if (!running) break;
    if (round > 1000000) std::abort();
  }
  for (int r = 0; r < n; ++r)
    if (!status[r].isOk())
      std::fprintf(stderr, "%s/%s: rank %d: %s\n", target.c_str(), name.c_str(), r, status[r].toString().c_str());
  std::string seed = bytesOf(head.data(), head.size());
  for (const std::string& m : world.received[me]) {
    if (m.size() > 0xffff) std::abort();
    seed += static_cast<char>(m.size() & 0xff);
    seed += static_cast<char>(m.size() >> 8);
    seed += m;
  }
  write(target, name, seed);
}

void wireSeeds() {
  using namespace fuzz::wire_keys;
  namespace wire = runtime::wire;
  write("bootstrap_wire", "hello", std::string(1, '\0') + wire::encodeHello(acceptorNonce()));
  write(
      "bootstrap_wire", "claim",
      std::string(1, '\1') + wire::encodeClaim(kSecret, acceptorNonce(), kPeerRank, kJobId, connectorNonce()).value());
  write("bootstrap_wire", "answer",
        std::string(1, '\2') +
            wire::encodeAnswer(kSecret, acceptorNonce(), connectorNonce(), kJobId, kPeerRank, kMyRank).value());
  auto key = wire::sessionKey(kSecret, acceptorNonce(), connectorNonce(), kJobId, kPeerRank, kMyRank).value();
  write("bootstrap_wire", "frame",
        std::string(1, '\3') + wire::encodeFrame(key, 0, "rank 3 at 10.0.0.3:29400").value());
  write("bootstrap_wire", "frame-empty", std::string(1, '\3') + wire::encodeFrame(key, 0, "").value());
}

void controlSeeds() {
  write("control_message", "abort", runtime::encodeControl(Status(Code::kTimeout, "allreduce timed out"), {4, 4}));
  write("control_message", "abort-range",
        runtime::encodeControl(Status(Code::kPeerFailed, "rank 2 left [reported by rank 1]"), {10, 12}));
  write("control_message", "abort-none", runtime::encodeControl(Status(Code::kMismatch, "count differs"), {}));
  write("control_message", "goodbye", runtime::kGoodbye);
}

void payloadSeeds() {
  for (uint8_t kind = 0; kind < 7; ++kind)
    for (uint8_t knob : {uint8_t{0x00}, uint8_t{0x13}, uint8_t{0xc1}}) {
      uint8_t head[fuzz::kPayloadHead] = {kind, knob, 0, 100};
      auto c = compress::createCompressor(fuzz::pickCompressor(kind, knob), fuzz::pickCount(head)).take();
      std::vector<float> g(c->count());
      for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.5f;
      std::vector<uint64_t> slot(2 + c->maxCompressedBytes() / 8);
      auto bytes = c->compress(g, {reinterpret_cast<std::byte*>(slot.data() + 1), c->maxCompressedBytes()}).value();
      slot[0] = bytes;
      write("compressor_payload", c->name() + (knob & 0x40 ? "+ef" : "") + (knob & 0x80 ? "+momentum" : ""),
            bytesOf(head, sizeof head) + bytesOf(reinterpret_cast<const uint8_t*>(slot.data()), 8 + bytes));
    }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  root = argv[1];
  wireSeeds();
  controlSeeds();
  payloadSeeds();
  // SparDL head: ranks-2, teams choice, sag (auto/r/b), rank, count (2 bytes), density choice.
  taskSeed("spardl", "n2", fuzz::spardlJob, {0, 0, 0, 0, 0, 64, 1});
  taskSeed("spardl", "n4-t2-rsag", fuzz::spardlJob, {2, 1, 1, 1, 0, 200, 2});
  taskSeed("spardl", "n6-t3-bsag", fuzz::spardlJob, {4, 2, 2, 4, 1, 44, 3});
  taskSeed("spardl", "n3-dense", fuzz::spardlJob, {1, 0, 0, 2, 0, 30, 4});
  // Plan head: collective, ranks-2, rank, count (2 bytes), dtype, op (and root).
  taskSeed("plan_header", "allreduce-f32-inline", fuzz::planJob, {0, 1, 1, 0, 16, 0, 0});
  taskSeed("plan_header", "allreduce-f64-chunks", fuzz::planJob, {0, 2, 0, 1, 200, 1, 1});
  taskSeed("plan_header", "allgather-i32", fuzz::planJob, {1, 0, 1, 0, 40, 4, 0});
  taskSeed("plan_header", "reduce-scatter-f16", fuzz::planJob, {2, 2, 3, 0, 90, 2, 0});
  taskSeed("plan_header", "broadcast-root2", fuzz::planJob, {3, 3, 0, 0, 70, 0, 2});
  taskSeed("plan_header", "barrier", fuzz::planJob, {4, 4, 2, 0, 0, 0, 0});
  // Marsit head: ranks-2, rank, count (2 bytes), knobs (pack, scale_block, momentum, full precision, seed).
  taskSeed("marsit", "n2-whole", fuzz::marsitJob, {0, 0, 0, 100, 0x00});
  taskSeed("marsit", "n3-chunked-blocks", fuzz::marsitJob, {1, 2, 8, 0, 0x13});
  taskSeed("marsit", "n4-momentum", fuzz::marsitJob, {2, 1, 1, 0, 0x24});
  taskSeed("marsit", "n2-full-precision", fuzz::marsitJob, {0, 1, 0, 50, 0x08});
  return 0;
}
