#include "client/eval_client.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace dflash::client {

namespace {

absl::StatusOr<std::string> ReadText(const std::string& path, const char* flag) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", flag, " file '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<ConnectOptions> LoadConnectOptions(const std::string& token_file,
                                                  const std::string& tls_ca,
                                                  const std::string& tls_cert,
                                                  const std::string& tls_key) {
  ConnectOptions out;
  if (!token_file.empty()) {
    absl::StatusOr<std::string> text = ReadText(token_file, "--token-file");
    if (!text.ok()) return text.status();
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      line = absl::StripAsciiWhitespace(line);
      if (!line.empty() && line[0] != '#') {
        out.token = std::string(line);
        break;
      }
    }
    if (out.token.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token-file '", token_file, "' holds no token"));
    }
  } else if (const char* env = std::getenv("DFLASH_EVAL_TOKEN"); env && *env) {
    out.token = std::string(absl::StripAsciiWhitespace(env));
  }
  if (tls_cert.empty() != tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  if (!tls_cert.empty() && tls_ca.empty()) {
    return absl::InvalidArgumentError("--tls-cert needs --tls-ca (the server's CA)");
  }
  if (!tls_ca.empty()) {
    absl::StatusOr<std::string> ca = ReadText(tls_ca, "--tls-ca");
    if (!ca.ok()) return ca.status();
    out.tls_ca = *ca;
  }
  if (!tls_cert.empty()) {
    absl::StatusOr<std::string> cert = ReadText(tls_cert, "--tls-cert");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadText(tls_key, "--tls-key");
    if (!key.ok()) return key.status();
    out.tls_cert = *cert;
    out.tls_key = *key;
  }
  return out;
}

EvalClient::EvalClient(std::string address, std::chrono::milliseconds timeout,
                       const ConnectOptions& connect)
    : address_(std::move(address)), timeout_(timeout), token_(connect.token) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!connect.tls_ca.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = connect.tls_ca;
    ssl.pem_cert_chain = connect.tls_cert;
    ssl.pem_private_key = connect.tls_key;
    credentials = grpc::SslCredentials(ssl);
  }
  channel_ = grpc::CreateChannel(address_, credentials);
  stub_ = pb::DrafterEval::NewStub(channel_);
}

void EvalClient::Prepare(grpc::ClientContext* ctx) const {
  if (timeout_.count() > 0) ctx->set_deadline(std::chrono::system_clock::now() + timeout_);
  if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
}

absl::Status EvalClient::Convert(const grpc::Status& status) const {
  if (status.ok()) return absl::OkStatus();
  const auto code = static_cast<absl::StatusCode>(status.error_code());
  if (code == absl::StatusCode::kUnavailable) {
    return absl::UnavailableError(
        absl::StrCat("cannot reach server at ", address_, ": ", status.error_message()));
  }
  if (code == absl::StatusCode::kDeadlineExceeded) {
    return absl::DeadlineExceededError(
        absl::StrCat("server at ", address_, " did not answer within ", timeout_.count() / 1000.0,
                     " s (--timeout): ", status.error_message()));
  }
  return absl::Status(code, status.error_message());
}

absl::Status EvalClient::Health() {
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  grpc::ClientContext ctx;
  Prepare(&ctx);
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  if (absl::Status s = Convert(stub->Check(&ctx, req, &resp)); !s.ok()) return s;
  if (resp.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
    return absl::UnavailableError(
        absl::StrCat("server at ", address_, " is ",
                     grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status())));
  }
  return absl::OkStatus();
}

// One unary call: context, deadline, status conversion.
#define DFLASH_UNARY(Method, Request, Response)                     \
  absl::StatusOr<Response> EvalClient::Method(const Request& req) { \
    grpc::ClientContext ctx;                                        \
    Prepare(&ctx);                                                  \
    Response resp;                                                  \
    absl::Status s = Convert(stub_->Method(&ctx, req, &resp));      \
    if (!s.ok()) return s;                                          \
    return resp;                                                    \
  }

DFLASH_UNARY(ValidateCheckpoint, pb::ValidateCheckpointRequest, pb::ValidateCheckpointResponse)
DFLASH_UNARY(LoadDrafter, pb::LoadDrafterRequest, pb::LoadResponse)
DFLASH_UNARY(LoadTarget, pb::LoadTargetRequest, pb::LoadResponse)
DFLASH_UNARY(LoadDataset, pb::LoadDatasetRequest, pb::LoadResponse)
DFLASH_UNARY(ListResources, pb::ListResourcesRequest, pb::ListResourcesResponse)
DFLASH_UNARY(RunEval, pb::RunEvalRequest, pb::EvalResult)
DFLASH_UNARY(SubmitEval, pb::SubmitEvalRequest, pb::EvalJob)
DFLASH_UNARY(ListEvals, pb::ListEvalsRequest, pb::ListEvalsResponse)
#undef DFLASH_UNARY

// Unary calls that take a job id.
#define DFLASH_BY_ID(Method, Request)                                     \
  absl::StatusOr<pb::EvalJob> EvalClient::Method(const std::string& id) { \
    grpc::ClientContext ctx;                                              \
    Prepare(&ctx);                                                        \
    Request req;                                                          \
    req.set_id(id);                                                       \
    pb::EvalJob resp;                                                     \
    absl::Status s = Convert(stub_->Method(&ctx, req, &resp));            \
    if (!s.ok()) return s;                                                \
    return resp;                                                          \
  }

DFLASH_BY_ID(GetEval, pb::GetEvalRequest)
DFLASH_BY_ID(CancelEval, pb::CancelEvalRequest)
DFLASH_BY_ID(ResubmitEval, pb::ResubmitEvalRequest)
#undef DFLASH_BY_ID

bool IsFinalState(pb::JobState state) {
  return state == pb::JOB_STATE_SUCCEEDED || state == pb::JOB_STATE_FAILED ||
         state == pb::JOB_STATE_CANCELLED || state == pb::JOB_STATE_INTERRUPTED;
}

absl::StatusOr<pb::CompareEvalsResponse> EvalClient::CompareEvals(
    const std::vector<std::string>& ids) {
  pb::CompareEvalsRequest req;
  for (const std::string& id : ids) req.add_ids(id);
  return CompareEvals(req);
}

absl::StatusOr<pb::CompareEvalsResponse> EvalClient::CompareEvals(
    const pb::CompareEvalsRequest& req) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  pb::CompareEvalsResponse resp;
  absl::Status s = Convert(stub_->CompareEvals(&ctx, req, &resp));
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<pb::ExportProfileResponse> EvalClient::ExportProfile(
    const pb::ExportProfileRequest& req) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  pb::ExportProfileResponse resp;
  absl::Status s = Convert(stub_->ExportProfile(&ctx, req, &resp));
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<pb::CalibrateEvalResponse> EvalClient::CalibrateEval(
    const pb::CalibrateEvalRequest& req) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  pb::CalibrateEvalResponse resp;
  absl::Status s = Convert(stub_->CalibrateEval(&ctx, req, &resp));
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<pb::EvalJob> EvalClient::WatchEval(const std::string& id,
                                                  const JobCallback& on_update) {
  grpc::ClientContext ctx;  // no deadline: the stream lasts as long as the job
  if (!token_.empty()) ctx.AddMetadata("authorization", "Bearer " + token_);
  pb::WatchEvalRequest req;
  req.set_id(id);
  std::unique_ptr<grpc::ClientReader<pb::EvalJob>> reader = stub_->WatchEval(&ctx, req);
  pb::EvalJob job;
  bool got_any = false;
  while (reader->Read(&job)) {
    got_any = true;
    if (on_update) on_update(job);
    if (IsFinalState(job.state())) {
      ctx.TryCancel();  // the server ends the stream here; do not wait for it
      break;
    }
  }
  grpc::Status st = reader->Finish();
  if (got_any && IsFinalState(job.state())) return job;
  // No WatchEval, or its stream limit reached: poll instead.
  if (st.error_code() == grpc::StatusCode::UNIMPLEMENTED ||
      st.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
    return PollEval(id, on_update);
  }
  if (absl::Status s = Convert(st); !s.ok()) return s;
  // The stream ended before a final state (a server draining): read it once more.
  return PollEval(id, on_update);
}

absl::StatusOr<pb::EvalJob> EvalClient::PollEval(const std::string& id,
                                                 const JobCallback& on_update) {
  for (;;) {
    absl::StatusOr<pb::EvalJob> job = GetEval(id);
    if (!job.ok()) return job.status();
    if (on_update) on_update(*job);
    if (IsFinalState(job->state())) return job;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

absl::StatusOr<pb::ServerInfo> EvalClient::GetServerInfo() {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  pb::ServerInfo resp;
  absl::Status s = Convert(stub_->GetServerInfo(&ctx, pb::GetServerInfoRequest(), &resp));
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<pb::UnloadResponse> EvalClient::Unload(pb::ResourceKind kind,
                                                      const std::string& name) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  pb::UnloadRequest req;
  req.set_name(name);
  pb::UnloadResponse resp;
  grpc::Status st;
  switch (kind) {
    case pb::RESOURCE_KIND_TARGET: st = stub_->UnloadTarget(&ctx, req, &resp); break;
    case pb::RESOURCE_KIND_DRAFTER: st = stub_->UnloadDrafter(&ctx, req, &resp); break;
    case pb::RESOURCE_KIND_DATASET: st = stub_->UnloadDataset(&ctx, req, &resp); break;
    default: return absl::InvalidArgumentError("unload: kind must be target, drafter or dataset");
  }
  if (absl::Status s = Convert(st); !s.ok()) return s;
  return resp;
}

}  // namespace dflash::client
