// File: job_rpcs_fixture.h
// The fixture of the job RPCs' tests (job_rpcs_*_test.cc): the service over
// a fake core and a fake job service, on a real loopback server with a real
// stub; unary, raw and WatchEval calls to it (a WatchEval stream to any
// loopback server too: watch_reactor_test.cc); a job record to answer with,
// and statuses as "CODE: message".
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "fakes/fake_eval_core.h"
#include "fakes/fake_job_service.h"
#include "gtest/gtest.h"
#include "service/eval_service.h"
#include "test_util/loopback_server.h"
#include "types/job_types.h"

namespace dflash::testing {

constexpr auto kWait = std::chrono::seconds(10);
constexpr int64_t kCreateMicros = 1'700'000'000'123'456;

// "CODE: message", so one comparison checks both and a failure shows both.
std::string Describe(const grpc::Status& st);
std::string Describe(const absl::Status& st);

// A WatchEval stream: its context (with a kWait deadline) and its reader.
struct WatchStream {
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReader<::dflash::eval::v1::EvalJob>> reader;
};
// Opens WatchEval of `id` on `server`.
std::unique_ptr<WatchStream> OpenWatchStream(const LoopbackServer& server, const std::string& id);

// A job of run-a, step 4000 (drafter step-4000 on mt-bench), created at
// kCreateMicros, in `state` with `blocks_done` of 10 blocks done.
types::JobRecord Record(const std::string& id, types::JobState state, int64_t blocks_done = 0);

class JobRpcsTest : public ::testing::Test {
 protected:
  void SetUp() override { Start({}); }
  void TearDown() override { Stop(); }

  // (Re)starts the service with `options` on a new server.
  void Start(service::ServiceOptions options);
  void Stop();

  // One unary call with a fresh context and a deadline.
  template <typename Req, typename Resp>
  grpc::Status Call(grpc::Status (::dflash::eval::v1::DrafterEval::Stub::*method)(
                        grpc::ClientContext*, const Req&, Resp*),
                    const Req& req, Resp* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kWait);
    return (server_->stub().*method)(&ctx, req, resp);
  }
  // `bytes` as the request of DrafterEval's `method`.
  grpc::Status Raw(const std::string& method, const std::string& bytes);

  using Watch = WatchStream;
  std::unique_ptr<Watch> OpenWatch(const std::string& id) { return OpenWatchStream(*server_, id); }
  // The handle of the watch the server started last (after its first
  // message was read, Watch has returned).
  int64_t LastHandle();

  FakeEvalCore core_;
  FakeJobService jobs_;
  std::unique_ptr<service::EvalService> service_;
  std::unique_ptr<LoopbackServer> server_;
};

}  // namespace dflash::testing
