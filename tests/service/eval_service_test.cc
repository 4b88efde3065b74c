// The service layer over a fake core, on a real loopback server: proto <->
// core translation, status codes passed through unchanged, request checks.
#include "service/eval_service.h"

#include <memory>

#include <grpcpp/grpcpp.h>

#include "fakes/fake_eval_core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "resident/resource.h"
#include "test_util/loopback_server.h"

namespace dflash::service {
namespace {

namespace pb = ::dflash::eval::v1;
using ::testing::HasSubstr;

class EvalServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service_ = std::make_unique<EvalService>(core_, 2);
    server_ = std::make_unique<testing::LoopbackServer>(service_.get());
    ASSERT_TRUE(server_->ok());
    stub_ = &server_->stub();
  }
  void TearDown() override {
    server_.reset();
    service_.reset();
  }

  testing::FakeEvalCore core_;
  std::unique_ptr<EvalService> service_;
  std::unique_ptr<testing::LoopbackServer> server_;
  pb::DrafterEval::Stub* stub_ = nullptr;
};

TEST_F(EvalServiceTest, ServerInfoIsTranslated) {
  core_.info.server_version = "9.9.9";
  core_.info.default_dtype = "bf16";
  core_.info.devices = {{"cuda:0", "NVIDIA H200", 140, 12}};
  core_.info.resident_drafters = 3;
  grpc::ClientContext ctx;
  pb::ServerInfo info;
  ASSERT_TRUE(stub_->GetServerInfo(&ctx, pb::GetServerInfoRequest(), &info).ok());
  EXPECT_EQ(info.server_version(), "9.9.9");
  EXPECT_EQ(info.default_dtype(), pb::DTYPE_BF16);
  ASSERT_EQ(info.devices_size(), 1);
  EXPECT_EQ(info.devices(0).description(), "NVIDIA H200");
  EXPECT_EQ(info.devices(0).used_memory_bytes(), 12);
  EXPECT_EQ(info.resident_drafters(), 3);
}

TEST_F(EvalServiceTest, CoreErrorsKeepTheirCodeAndMessage) {
  const std::vector<absl::Status> errors = {
      absl::NotFoundError("no such file '/m/x'"),
      absl::InvalidArgumentError("tensor 'fc.weight' has shape [1]; expected [2]"),
      absl::FailedPreconditionError("drafter needs layer 61; dataset holds [1, 16, 31, 46]"),
      absl::PermissionDeniedError("path '/etc' is outside the server's data roots"),
      absl::AlreadyExistsError("a different drafter is already resident as 'a'"),
      absl::ResourceExhaustedError("out of memory"),
  };
  for (const absl::Status& e : errors) {
    core_.next_error = e;
    grpc::ClientContext ctx;
    pb::LoadDrafterRequest req;
    req.set_path("/m/x");
    pb::LoadResponse resp;
    grpc::Status st = stub_->LoadDrafter(&ctx, req, &resp);
    EXPECT_EQ(static_cast<int>(st.error_code()), static_cast<int>(e.code()));
    EXPECT_EQ(st.error_message(), std::string(e.message()));
  }
}

TEST_F(EvalServiceTest, LoadDrafterPassesTheRequestThrough) {
  core_.load_result.resource.name = "step-4000";
  core_.load_result.resource.bytes = 1234;
  core_.load_result.reused = true;
  grpc::ClientContext ctx;
  pb::LoadDrafterRequest req;
  req.set_name("step-4000");
  req.set_path("/m/step-4000");
  req.set_dtype(pb::DTYPE_BF16);
  req.set_allow_unexpected(true);
  pb::LoadResponse resp;
  ASSERT_TRUE(stub_->LoadDrafter(&ctx, req, &resp).ok());
  EXPECT_EQ(core_.last_drafter.path, "/m/step-4000");
  EXPECT_EQ(core_.last_drafter.dtype, "bf16");
  EXPECT_TRUE(core_.last_drafter.allow_unexpected);
  EXPECT_EQ(resp.resource().name(), "step-4000");
  EXPECT_EQ(resp.resource().bytes(), 1234);
  EXPECT_TRUE(resp.reused());
}

TEST_F(EvalServiceTest, LoadDatasetTranslatesLayerIdsAndRejectsNegativeCounts) {
  grpc::ClientContext ctx;
  pb::LoadDatasetRequest req;
  req.set_path("/d");
  auto& aux = (*req.mutable_layer_ids())["aux_hidden_state"];
  for (int id : {1, 16, 31, 46}) aux.add_ids(id);
  (*req.mutable_layer_ids())["hidden_state"].add_ids(61);
  pb::LoadResponse resp;
  ASSERT_TRUE(stub_->LoadDataset(&ctx, req, &resp).ok());
  EXPECT_EQ(core_.last_dataset.layer_ids.at("aux_hidden_state"), (std::vector<int>{1, 16, 31, 46}));
  EXPECT_EQ(core_.last_dataset.layer_ids.at("hidden_state"), (std::vector<int>{61}));

  grpc::ClientContext ctx2;
  req.set_max_samples(-3);
  grpc::Status st = stub_->LoadDataset(&ctx2, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "max_samples must be >= 0; got -3");
}

TEST_F(EvalServiceTest, RunEvalChecksEnumsAndCounts) {
  core_.eval_result.blocks = 7;
  core_.eval_result.accept_length_pooled = 3.5;
  core_.eval_result.positions.resize(2);
  core_.eval_result.positions[1].position = 2;
  core_.eval_result.positions[1].accuracy = 0.25;
  {
    grpc::ClientContext ctx;
    pb::RunEvalRequest req;
    req.mutable_request()->set_drafter("d");
    req.mutable_request()->set_dataset("s");
    req.mutable_request()->set_mode(pb::EVAL_MODE_REPLAY);
    req.mutable_request()->set_anchors(pb::ANCHOR_STRATEGY_ALL);
    req.mutable_request()->set_max_new_tokens(64);
    pb::EvalResult resp;
    ASSERT_TRUE(stub_->RunEval(&ctx, req, &resp).ok());
    EXPECT_EQ(core_.last_eval.options.mode, types::Mode::kReplay);
    EXPECT_EQ(core_.last_eval.options.anchors, types::AnchorStrategy::kAll);
    EXPECT_EQ(core_.last_eval.options.max_new_tokens, 64);
    EXPECT_EQ(resp.blocks(), 7);
    EXPECT_DOUBLE_EQ(resp.accept_length_pooled(), 3.5);
    EXPECT_DOUBLE_EQ(resp.positions(1).accuracy(), 0.25);
  }
  {
    grpc::ClientContext ctx;
    pb::RunEvalRequest req;
    req.mutable_request()->set_mode(static_cast<pb::EvalMode>(9));
    pb::EvalResult resp;
    grpc::Status st = stub_->RunEval(&ctx, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(st.error_message(), "mode 9 is not anchor or replay");
  }
  {
    grpc::ClientContext ctx;
    pb::RunEvalRequest req;
    req.mutable_request()->set_max_blocks(-1);
    pb::EvalResult resp;
    grpc::Status st = stub_->RunEval(&ctx, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(st.error_message(), "max_blocks must be >= 0; got -1");
  }
}

TEST_F(EvalServiceTest, ListResourcesFiltersByKindAndRejectsUnknownKinds) {
  resident::ResourceInfo a, b;
  a.kind = resident::ResourceKind::kDrafter;
  a.name = "a";
  b.kind = resident::ResourceKind::kDataset;
  b.name = "b";
  core_.resources = {a, b};
  grpc::ClientContext ctx;
  pb::ListResourcesRequest req;
  req.set_kind(pb::RESOURCE_KIND_DATASET);
  pb::ListResourcesResponse resp;
  ASSERT_TRUE(stub_->ListResources(&ctx, req, &resp).ok());
  ASSERT_EQ(resp.resources_size(), 1);
  EXPECT_EQ(resp.resources(0).name(), "b");

  grpc::ClientContext ctx2;
  req.set_kind(static_cast<pb::ResourceKind>(42));
  grpc::Status st = stub_->ListResources(&ctx2, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("resource kind 42 is not one of"));
}

TEST_F(EvalServiceTest, UnparsableRequestsAreInvalidArgumentNotUnimplemented) {
  // gRPC's typed handler would answer UNIMPLEMENTED with an empty message.
  const std::string invalid_utf8 = std::string("\x12\x02") + "\xC3\x28";  // path (2)
  grpc::Status st = server_->CallRaw("/dflash.eval.v1.DrafterEval/LoadDrafter", invalid_utf8);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(),
            "request is not a valid dflash.eval.v1.LoadDrafterRequest: field 'path' (2) is not "
            "valid UTF-8 (byte 0x28 at offset 1 of the value)");
  EXPECT_EQ(core_.last_drafter.path, "");  // the core never saw it
}

TEST_F(EvalServiceTest, OutOfRangeDTypeIsRefusedBeforeTheCore) {
  grpc::ClientContext ctx;
  pb::LoadDrafterRequest req;
  req.set_path("/m/x");
  req.set_dtype(static_cast<pb::DType>(5));
  pb::LoadResponse resp;
  grpc::Status st = stub_->LoadDrafter(&ctx, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(),
            "dtype 5 is not a DType: 0 (the default), 1 (fp32), 2 (fp16) or 3 (bf16)");
  EXPECT_EQ(core_.last_drafter.path, "");
}

TEST_F(EvalServiceTest, LongMessagesAreCutSoTheClientStillGetsThem) {
  // Over the client's 8 KiB metadata limit the client would see only
  // RESOURCE_EXHAUSTED "received initial metadata size exceeds limit".
  core_.next_error = absl::NotFoundError(std::string(10000, 'e'));
  grpc::ClientContext ctx;
  pb::LoadDrafterRequest req;
  req.set_path("/m/x");
  pb::LoadResponse resp;
  grpc::Status st = stub_->LoadDrafter(&ctx, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(st.error_message(), std::string(4096, 'e') + "... (5904 more bytes)");
}

TEST_F(EvalServiceTest, JobRpcsWithoutAJobServiceAreUnimplemented) {
  // The no-jobs constructor: job RPCs say why; tests/service/job_rpcs_*_test.cc
  // covers them with a job service.
  const std::string why = "this server was started without a job service";
  {
    grpc::ClientContext ctx;
    pb::SubmitEvalRequest req;
    req.mutable_request()->set_drafter("d");
    pb::EvalJob job;
    grpc::Status st = stub_->SubmitEval(&ctx, req, &job);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNIMPLEMENTED);
    EXPECT_EQ(st.error_message(), why);
  }
  {
    grpc::ClientContext ctx;
    pb::GetEvalRequest req;
    req.set_id("ev-1");
    pb::EvalJob job;
    grpc::Status st = stub_->GetEval(&ctx, req, &job);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNIMPLEMENTED);
    EXPECT_EQ(st.error_message(), why);
  }
  {
    grpc::ClientContext ctx;
    pb::WatchEvalRequest req;
    req.set_id("ev-1");
    auto reader = stub_->WatchEval(&ctx, req);
    pb::EvalJob job;
    EXPECT_FALSE(reader->Read(&job));
    grpc::Status st = reader->Finish();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNIMPLEMENTED);
    EXPECT_EQ(st.error_message(), why);
  }
}

}  // namespace
}  // namespace dflash::service
