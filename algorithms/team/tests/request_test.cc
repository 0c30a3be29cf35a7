// Request::onComplete: the callback runs once, on the thread that completes the request, after
// done() turns true, or at once when the request has already ended.
#include "algorithms/team/request.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>

namespace tsr::algorithms {
namespace {

TEST(RequestOnComplete, RunsOnceOnTheCompletingThreadAfterDone) {
  auto request = std::make_shared<Request>();
  int calls = 0;
  bool doneInside = false;
  std::thread::id ranOn;
  Status seen;
  request->onComplete([&](const Status& st) {
    ++calls;
    doneInside = request->done();
    ranOn = std::this_thread::get_id();
    seen = st;
  });
  EXPECT_EQ(calls, 0);
  std::thread::id completer;
  std::thread t([&] {
    completer = std::this_thread::get_id();
    request->complete(Status(Code::kPeerFailed, "rank 2 died"));
    request->complete(Status::ok());  // a second completion changes nothing
  });
  t.join();
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(doneInside);
  EXPECT_EQ(ranOn, completer);
  EXPECT_EQ(seen.code(), Code::kPeerFailed);
  EXPECT_EQ(seen.message(), "rank 2 died");
  EXPECT_EQ(request->wait().code(), Code::kPeerFailed);
}

TEST(RequestOnComplete, AlreadyDoneRunsAtOnceOnTheCaller) {
  Request request;
  request.complete(Status::ok());
  bool ran = false;
  request.onComplete([&](const Status& st) { ran = st.isOk(); });
  EXPECT_TRUE(ran);
}

TEST(RequestOnComplete, EveryCallbackRunsAndMayReleaseTheLastReference) {
  auto request = std::make_shared<Request>();
  std::weak_ptr<Request> weak = request;
  int calls = 0;
  auto* holder = new std::shared_ptr<Request>(request);
  request->onComplete([&](const Status&) { ++calls; });
  request->onComplete([&, holder](const Status&) {
    ++calls;
    delete holder;  // the request's last owner, once `request` below is gone
  });
  Request* raw = request.get();
  request.reset();
  raw->complete(Status::ok());
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(weak.expired());
}

}  // namespace
}  // namespace tsr::algorithms
