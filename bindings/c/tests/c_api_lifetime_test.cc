// The C API's handles over time: what is left after tsr_comm_destroy (every handle made from
// the communicator reports TSR_ERR_ABORTED instead of touching freed memory; a finished
// request keeps its status), completion callbacks (tsr_request_on_complete: run by Tessera's
// progress thread, with no caller polling; failures reported; no waiting nor blocking call in one), one live
// tensor per name, and a tensor's residual and result kind (tsr_tensor_set_residual, op=).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "bindings/c/tests/c_ranks.h"
#include "tessera/tessera.h"

using tsr::ctest::lastError;
using tsr::ctest::runCRanks;

namespace {

bool mentions(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

void onComplete(void* user, tsr_status_t status) {
  auto* seen = static_cast<std::atomic<int>*>(user);
  seen->store(static_cast<int>(status) + 100);  // 100 + status: set once called
}

// Every call on a handle of a destroyed communicator: TSR_ERR_ABORTED saying so (and naming
// the tensor); a request that had finished keeps its status; one pending at destroy fails.
TEST(CApi, HandlesOutliveTheirCommunicator) {
  std::latch rank0Destroyed(1);
  runCRanks(2, [&](tsr_comm_t& comm, int r) {
    const size_t n = 64;
    tsr_param_t marsit[] = {{"algorithm", "marsit"}};
    tsr_param_t topk[] = {{"algorithm", "compressed"}, {"compressor", "topk"}, {"k", "4"}};
    tsr_param_t spardl[] = {{"algorithm", "spardl"}, {"density", "0.5"}};
    tsr_tensor_t tensors[4] = {};
    ASSERT_EQ(tsr_tensor_create(comm, "dense.w", n, TSR_FLOAT32, nullptr, 0, &tensors[0]), TSR_OK) << lastError();
    ASSERT_EQ(tsr_tensor_create(comm, "marsit.w", n, TSR_FLOAT32, marsit, 1, &tensors[1]), TSR_OK) << lastError();
    ASSERT_EQ(tsr_tensor_create(comm, "topk.w", n, TSR_FLOAT32, topk, 3, &tensors[2]), TSR_OK) << lastError();
    ASSERT_EQ(tsr_tensor_create(comm, "spardl.w", n, TSR_FLOAT32, spardl, 2, &tensors[3]), TSR_OK) << lastError();
    size_t buckets[] = {n};
    tsr_param_t delta[] = {{"delta", "0"}}, interval[] = {{"interval", "1"}};
    tsr_selsync_t selsync = nullptr;
    tsr_covap_t covap = nullptr;
    ASSERT_EQ(tsr_selsync_create(comm, delta, 1, buckets, 1, &selsync), TSR_OK) << lastError();
    ASSERT_EQ(tsr_covap_create(comm, interval, 1, buckets, 1, &covap), TSR_OK) << lastError();
    std::vector<float> data(n, 1.0f);
    for (tsr_tensor_t t : tensors) ASSERT_EQ(tsr_tensor_allreduce(t, data.data(), nullptr), TSR_OK) << lastError();
    tsr_request_t finished = nullptr, pending = nullptr;
    ASSERT_EQ(tsr_allreduce(comm, data.data(), data.data(), n, TSR_FLOAT32, TSR_SUM, &finished), TSR_OK);
    ASSERT_EQ(tsr_wait(finished), TSR_OK) << lastError();
    ASSERT_EQ(tsr_barrier(comm, nullptr), TSR_OK) << lastError();  // both ranks are done with the above
    // A barrier only rank 0 joins: still pending when rank 0 destroys its communicator.
    if (r == 0) {
      ASSERT_EQ(tsr_barrier(comm, &pending), TSR_OK) << lastError();
    }

    // Rank 1 leaves after rank 0, or rank 0's barrier would fail naming it first.
    if (r == 1) rank0Destroyed.wait();
    ASSERT_EQ(tsr_comm_destroy(comm), TSR_OK) << lastError();
    comm = nullptr;
    if (r == 0) rank0Destroyed.count_down();

    const char* names[] = {"dense.w", "marsit.w", "topk.w", "spardl.w"};
    std::vector<float> kept(n, 0.0f);
    for (int k = 0; k < 4; ++k) {
      tsr_tensor_t t = tensors[k];
      tsr_request_t req = nullptr;
      EXPECT_EQ(tsr_tensor_allreduce(t, data.data(), nullptr), TSR_ERR_ABORTED) << names[k];
      EXPECT_TRUE(mentions(lastError(), "destroyed") && mentions(lastError(), names[k])) << lastError();
      EXPECT_EQ(tsr_tensor_allreduce(t, data.data(), &req), TSR_ERR_ABORTED) << names[k];
      EXPECT_EQ(req, nullptr);
      uint64_t steps = 0;
      tsr_op_t kind;
      EXPECT_EQ(tsr_tensor_info(t, &steps, nullptr), TSR_ERR_ABORTED) << names[k];
      EXPECT_EQ(tsr_tensor_result_kind(t, &kind), TSR_ERR_ABORTED) << names[k];
      EXPECT_EQ(tsr_tensor_residual(t, kept.data()), TSR_ERR_ABORTED) << names[k];
      EXPECT_EQ(tsr_tensor_set_residual(t, kept.data()), TSR_ERR_ABORTED) << names[k];
      EXPECT_EQ(tsr_tensor_destroy(t), TSR_OK) << names[k];
    }
    float* bucket = data.data();
    int synced = 0;
    EXPECT_EQ(tsr_selsync_step(selsync, 1.0, &bucket, &synced), TSR_ERR_ABORTED);
    EXPECT_TRUE(mentions(lastError(), "destroyed")) << lastError();
    EXPECT_EQ(tsr_selsync_stats(selsync, nullptr, nullptr, nullptr), TSR_ERR_ABORTED);
    EXPECT_EQ(tsr_selsync_destroy(selsync), TSR_OK);
    EXPECT_EQ(tsr_covap_begin_step(covap), TSR_ERR_ABORTED);
    EXPECT_EQ(tsr_covap_bucket_ready(covap, 0, data.data()), TSR_ERR_ABORTED);
    EXPECT_EQ(tsr_covap_finish_step(covap), TSR_ERR_ABORTED);
    EXPECT_EQ(tsr_covap_info(covap, nullptr, nullptr), TSR_ERR_ABORTED);
    EXPECT_EQ(tsr_covap_destroy(covap), TSR_OK);

    EXPECT_EQ(tsr_test(finished), TSR_OK) << lastError();
    EXPECT_EQ(tsr_wait(finished), TSR_OK) << lastError();
    EXPECT_EQ(tsr_request_free(finished), TSR_OK);
    if (r == 0) {
      EXPECT_EQ(tsr_wait(pending), TSR_ERR_ABORTED);
      EXPECT_TRUE(mentions(lastError(), "destroyed")) << lastError();
      EXPECT_EQ(tsr_test(pending), TSR_ERR_ABORTED);
      std::atomic<int> seen{0};  // a callback on an ended request runs at once
      EXPECT_EQ(tsr_request_on_complete(pending, onComplete, &seen), TSR_OK);
      EXPECT_EQ(seen.load(), 100 + TSR_ERR_ABORTED);
      EXPECT_EQ(tsr_request_free(pending), TSR_OK);
    }
  });
}

// The callback runs once the collective ends, on a Tessera thread, while the caller only
// sleeps; the caller may free the request first. A failed collective reports its status, and
// tsr_last_error() inside the callback gives the message.
TEST(CApi, RequestOnCompleteRunsWithNobodyPolling) {
  std::latch firstDone(3);
  runCRanks(3,
            [&](tsr_comm_t comm, int r) {
              std::vector<float> x(1 << 16, static_cast<float>(r + 1));
              struct Seen {
                std::atomic<int> status{-1};
                std::atomic<bool> otherThread{false};
                std::string message;
                std::thread::id caller = std::this_thread::get_id();
              } seen;
              auto record = [](void* user, tsr_status_t status) {
                auto* s = static_cast<Seen*>(user);
                s->otherThread = std::this_thread::get_id() != s->caller;
                s->message = tsr_last_error();
                s->status = static_cast<int>(status);  // last: the caller reads the rest after it
              };
              auto waitFor = [&] {
                for (int i = 0; i < 20000 && seen.status.load() < 0; ++i)
                  std::this_thread::sleep_for(std::chrono::milliseconds(1));
              };
              tsr_request_t req = nullptr;
              ASSERT_EQ(tsr_allreduce(comm, x.data(), x.data(), x.size(), TSR_FLOAT32, TSR_SUM, &req), TSR_OK);
              ASSERT_EQ(tsr_request_on_complete(req, record, &seen), TSR_OK);
              const bool ranAtOnce = seen.status.load() >= 0;  // it had ended already (possible, not likely)
              ASSERT_EQ(tsr_request_free(req), TSR_OK);        // the callback does not need the handle
              waitFor();
              EXPECT_EQ(seen.status.load(), TSR_OK);  // not ASSERT: the other ranks wait for this one below
              if (!ranAtOnce) {
                EXPECT_TRUE(seen.otherThread.load());
              }
              EXPECT_EQ(x[0], 6.0f);
              EXPECT_EQ(x.back(), 6.0f);

              // Every rank has ended the first one: the mismatch's abort notice cannot fail it anywhere.
              firstDone.arrive_and_wait();
              seen.status = -1;
              ASSERT_EQ(tsr_allreduce(comm, x.data(), x.data(), r == 1 ? 10 : 11, TSR_FLOAT32, TSR_SUM, &req), TSR_OK);
              ASSERT_EQ(tsr_request_on_complete(req, record, &seen), TSR_OK);
              waitFor();
              EXPECT_EQ(seen.status.load(), TSR_ERR_MISMATCH);
              EXPECT_TRUE(mentions(seen.message, "count differs")) << seen.message;
              EXPECT_EQ(tsr_wait(req), TSR_ERR_MISMATCH);
              EXPECT_EQ(tsr_request_free(req), TSR_OK);
              EXPECT_EQ(tsr_request_on_complete(nullptr, record, &seen), TSR_ERR_INVALID_ARGUMENT);
            },
            {{"timeout_ms", "20000"}});
}

// A callback runs on the thread that drives Tessera: tsr_wait there on a request still
// running is refused at once, saying why, instead of waiting for good; tsr_test is fine, and
// so is a wait in a callback run at once on the registering thread.
TEST(CApi, WaitInACompletionCallbackIsRefused) {
  std::latch registered(2), callbacksRan(2);
  runCRanks(2,
            [&](tsr_comm_t comm, int r) {
              const int peer = 1 - r;
              int incoming = 0, outgoing = r + 10, trigger = 0, one = 1;
              struct Seen {
                tsr_request_t pending = nullptr;
                std::atomic<int> waited{-1};
                int tested = -1;
                std::string message;
              } seen;
              // Each pending until the peer sends it: tag 8 once both ranks have registered
              // (so the callback cannot run at once, on this thread), tag 7 once both ran.
              tsr_request_t req = nullptr;
              ASSERT_EQ(tsr_recv(comm, &incoming, 1, TSR_INT32, peer, 7, &seen.pending), TSR_OK);
              ASSERT_EQ(tsr_recv(comm, &trigger, 1, TSR_INT32, peer, 8, &req), TSR_OK);
              auto waitInside = [](void* user, tsr_status_t) {
                auto* s = static_cast<Seen*>(user);
                s->tested = tsr_test(s->pending);
                tsr_status_t st = tsr_wait(s->pending);
                s->message = tsr_last_error();
                s->waited = st;  // last: the caller reads the rest after it
              };
              ASSERT_EQ(tsr_request_on_complete(req, waitInside, &seen), TSR_OK);
              registered.arrive_and_wait();
              tsr_request_t sent = nullptr;
              ASSERT_EQ(tsr_send(comm, &one, 1, TSR_INT32, peer, 8, &sent), TSR_OK);
              for (int i = 0; i < 20000 && seen.waited.load() < 0; ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
              EXPECT_EQ(seen.waited.load(), TSR_ERR_INVALID_ARGUMENT);
              EXPECT_EQ(seen.tested, TSR_IN_PROGRESS);
              EXPECT_TRUE(mentions(seen.message, "tsr_request_on_complete callback")) << seen.message;
              EXPECT_EQ(tsr_wait(sent), TSR_OK);
              EXPECT_EQ(tsr_request_free(sent), TSR_OK);
              callbacksRan.arrive_and_wait();

              ASSERT_EQ(tsr_send(comm, &outgoing, 1, TSR_INT32, peer, 7, &sent), TSR_OK);
              // Ended now: a callback registered runs at once, here, where a wait is fine.
              seen.waited = -1;
              ASSERT_EQ(tsr_wait(req), TSR_OK);
              ASSERT_EQ(tsr_request_on_complete(req, waitInside, &seen), TSR_OK);
              EXPECT_EQ(seen.waited.load(), TSR_OK) << seen.message;
              EXPECT_EQ(incoming, peer + 10);
              EXPECT_EQ(trigger, 1);
              EXPECT_EQ(tsr_wait(sent), TSR_OK);
              for (tsr_request_t q : {req, sent, seen.pending}) EXPECT_EQ(tsr_request_free(q), TSR_OK);
            },
            {{"timeout_ms", "20000"}});
}

// Nor a call that blocks: a blocking collective there used to hang the job past every timeout,
// and tsr_comm_destroy to abort the process (the progress thread joining itself). Each is
// refused before anything is posted, and the communicator goes on.
TEST(CApi, BlockingCallsInACompletionCallbackAreRefused) {
  std::latch registered(2);
  runCRanks(2,
            [&](tsr_comm_t comm, int r) {
              const int peer = 1 - r;
              int trigger = 0, one = 1;
              struct Seen {
                tsr_comm_t comm = nullptr;
                std::vector<int> statuses;
                std::vector<std::string> messages;
                std::atomic<bool> ran{false};
              } seen;
              seen.comm = comm;
              tsr_request_t req = nullptr, sent = nullptr;
              ASSERT_EQ(tsr_recv(comm, &trigger, 1, TSR_INT32, peer, 8, &req), TSR_OK);
              auto blockInside = [](void* user, tsr_status_t) {
                auto* s = static_cast<Seen*>(user);
                float x = 1;
                tsr_comm_t part = nullptr;
                auto note = [&](tsr_status_t st) {
                  s->statuses.push_back(st);
                  s->messages.push_back(tsr_last_error());
                };
                note(tsr_allreduce(s->comm, &x, &x, 1, TSR_FLOAT32, TSR_SUM, nullptr));
                note(tsr_barrier(s->comm, nullptr));
                note(tsr_comm_split(s->comm, 0, 0, &part));
                float received[2];
                size_t got = 0;
                note(tsr_selsync_inject(s->comm, 1, 0, 1.0, &x, 1, received, 2, &got));
                note(tsr_comm_destroy(s->comm));
                s->ran = true;  // last: the caller reads the rest after it
              };
              ASSERT_EQ(tsr_request_on_complete(req, blockInside, &seen), TSR_OK);
              registered.arrive_and_wait();  // so it runs on Tessera's thread, not at once here
              ASSERT_EQ(tsr_send(comm, &one, 1, TSR_INT32, peer, 8, &sent), TSR_OK);
              for (int i = 0; i < 20000 && !seen.ran.load(); ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
              ASSERT_TRUE(seen.ran.load());
              const char* names[] = {"tsr_allreduce", "tsr_barrier", "tsr_comm_split", "tsr_selsync_inject",
                                     "tsr_comm_destroy"};
              ASSERT_EQ(seen.statuses.size(), 5u);
              for (size_t i = 0; i < 5; ++i) {
                EXPECT_EQ(seen.statuses[i], TSR_ERR_INVALID_ARGUMENT) << names[i];
                EXPECT_TRUE(mentions(seen.messages[i], std::string(names[i]) + ": a blocking call in a "
                                                                               "tsr_request_on_complete callback"))
                    << seen.messages[i];
              }
              // Nothing was posted or ended: the ranks' next collective is still their first.
              float x = static_cast<float>(r + 1);
              EXPECT_EQ(tsr_allreduce(comm, &x, &x, 1, TSR_FLOAT32, TSR_SUM, nullptr), TSR_OK) << lastError();
              EXPECT_EQ(x, 3.0f);
              EXPECT_EQ(tsr_wait(sent), TSR_OK);
              for (tsr_request_t q : {req, sent}) EXPECT_EQ(tsr_request_free(q), TSR_OK);
            },
            {{"timeout_ms", "20000"}});
}

TEST(CApi, OneLiveTensorPerName) {
  runCRanks(2, [](tsr_comm_t comm, int) {
    tsr_tensor_t a = nullptr, b = nullptr;
    tsr_param_t spardl[] = {{"algorithm", "spardl"}};
    ASSERT_EQ(tsr_tensor_create(comm, "fc1.weight", 16, TSR_FLOAT32, nullptr, 0, &a), TSR_OK) << lastError();
    EXPECT_EQ(tsr_tensor_create(comm, "fc1.weight", 16, TSR_FLOAT32, spardl, 1, &b), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(mentions(lastError(), "fc1.weight") && mentions(lastError(), "already")) << lastError();
    EXPECT_EQ(b, nullptr);
    ASSERT_EQ(tsr_tensor_destroy(a), TSR_OK);
    ASSERT_EQ(tsr_tensor_create(comm, "fc1.weight", 16, TSR_FLOAT32, spardl, 1, &b), TSR_OK) << lastError();
    // A failed creation leaves the name free.
    tsr_param_t bad[] = {{"algorithm", "marsit"}, {"topology", "tree"}};
    EXPECT_EQ(tsr_tensor_create(comm, "fc2.weight", 16, TSR_FLOAT32, bad, 2, &a), TSR_ERR_INVALID_ARGUMENT);
    ASSERT_EQ(tsr_tensor_create(comm, "fc2.weight", 16, TSR_FLOAT32, nullptr, 0, &a), TSR_OK) << lastError();
    EXPECT_EQ(tsr_tensor_destroy(a), TSR_OK);
    EXPECT_EQ(tsr_tensor_destroy(b), TSR_OK);
  });
}

// op=avg|sum for every algorithm, as tsr_tensor_result_kind reports; a residual set is read
// back as set; dense keeps none.
TEST(CApi, TensorResultKindAndResidual) {
  const int n = 3;
  runCRanks(n, [&](tsr_comm_t comm, int r) {
    struct Kind {
      const char* name;
      std::vector<tsr_param_t> params;
      tsr_op_t want;
    };
    std::vector<Kind> kinds = {
        {"d.avg", {}, TSR_AVG},
        {"d.sum", {{"op", "sum"}}, TSR_SUM},
        {"s.sum", {{"algorithm", "spardl"}, {"density", "1"}}, TSR_SUM},
        {"s.avg", {{"algorithm", "spardl"}, {"density", "1"}, {"op", "avg"}}, TSR_AVG},
        {"c.sum", {{"algorithm", "compressed"}, {"compressor", "none"}, {"op", "sum"}}, TSR_SUM},
        {"m.avg", {{"algorithm", "marsit"}, {"op", "avg"}}, TSR_AVG},
    };
    for (const Kind& k : kinds) {
      tsr_tensor_t t = nullptr;
      ASSERT_EQ(tsr_tensor_create(comm, k.name, 4, TSR_FLOAT32, k.params.data(), k.params.size(), &t), TSR_OK)
          << k.name << ": " << lastError();
      tsr_op_t kind;
      ASSERT_EQ(tsr_tensor_result_kind(t, &kind), TSR_OK);
      EXPECT_EQ(kind, k.want) << k.name;
      float g[4] = {1.0f * r, 2, 3, 4};
      ASSERT_EQ(tsr_tensor_allreduce(t, g, nullptr), TSR_OK) << k.name << ": " << lastError();
      if (k.name[0] != 'm') {  // exact: 0 + 1 + 2, or its average
        EXPECT_FLOAT_EQ(g[0], k.want == TSR_SUM ? 3.0f : 1.0f) << k.name;
      }
      EXPECT_EQ(tsr_tensor_destroy(t), TSR_OK);
    }
    tsr_tensor_t t = nullptr;
    tsr_param_t badOp[] = {{"op", "max"}};
    EXPECT_EQ(tsr_tensor_create(comm, "x", 4, TSR_FLOAT32, badOp, 1, &t), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(mentions(lastError(), "op=max")) << lastError();

    std::vector<float> zeros(8, 0.0f), values(8), back(8);
    for (int j = 0; j < 8; ++j) values[j] = 0.5f * j - r;
    ASSERT_EQ(tsr_tensor_create(comm, "dense", 8, TSR_FLOAT64, nullptr, 0, &t), TSR_OK) << lastError();
    EXPECT_EQ(tsr_tensor_set_residual(t, zeros.data()), TSR_OK) << lastError();
    EXPECT_EQ(tsr_tensor_set_residual(t, values.data()), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(mentions(lastError(), "dense")) << lastError();
    EXPECT_EQ(tsr_tensor_destroy(t), TSR_OK);
    tsr_param_t spardl[] = {{"algorithm", "spardl"}, {"density", "0.25"}};
    ASSERT_EQ(tsr_tensor_create(comm, "sparse", 8, TSR_FLOAT32, spardl, 2, &t), TSR_OK) << lastError();
    ASSERT_EQ(tsr_tensor_set_residual(t, values.data()), TSR_OK) << lastError();
    ASSERT_EQ(tsr_tensor_residual(t, back.data()), TSR_OK);
    EXPECT_EQ(back, values);
    EXPECT_EQ(tsr_tensor_set_residual(nullptr, values.data()), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(tsr_tensor_destroy(t), TSR_OK);
  });
}

}  // namespace
