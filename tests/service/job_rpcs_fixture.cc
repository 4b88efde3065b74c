#include "service/job_rpcs_fixture.h"

#include <utility>
#include <vector>

namespace dflash::testing {

namespace pb = ::dflash::eval::v1;

std::string Describe(const grpc::Status& st) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(st.error_code())) + ": " +
         st.error_message();
}

std::string Describe(const absl::Status& st) {
  return absl::StatusCodeToString(st.code()) + ": " + std::string(st.message());
}

types::JobRecord Record(const std::string& id, types::JobState state, int64_t blocks_done) {
  types::JobRecord r;
  r.id = id;
  r.state = state;
  r.request.params.drafter = "step-4000";
  r.request.params.dataset = "mt-bench";
  r.request.run = "run-a";
  r.request.step = 4000;
  r.progress.blocks_done = blocks_done;
  r.progress.blocks_total = 10;
  r.create_unix_micros = kCreateMicros;
  r.server_version = "9.9.9";
  return r;
}

void JobRpcsTest::Start(service::ServiceOptions options) {
  Stop();
  service_ = std::make_unique<service::EvalService>(core_, &jobs_, 2, std::move(options));
  server_ = std::make_unique<LoopbackServer>(service_.get());
  ASSERT_TRUE(server_->ok());
}

void JobRpcsTest::Stop() {
  server_.reset();
  service_.reset();
}

grpc::Status JobRpcsTest::Raw(const std::string& method, const std::string& bytes) {
  return server_->CallRaw("/dflash.eval.v1.DrafterEval/" + method, bytes);
}

std::unique_ptr<WatchStream> OpenWatchStream(const LoopbackServer& server, const std::string& id) {
  auto w = std::make_unique<WatchStream>();
  w->ctx.set_deadline(std::chrono::system_clock::now() + kWait);
  pb::WatchEvalRequest req;
  req.set_id(id);
  w->reader = server.stub().WatchEval(&w->ctx, req);
  return w;
}

int64_t JobRpcsTest::LastHandle() {
  std::vector<int64_t> handles = jobs_.WaitForWatches(1, kWait);
  return handles.empty() ? -1 : handles.back();
}

}  // namespace dflash::testing
