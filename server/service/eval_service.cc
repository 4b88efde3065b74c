#include "service/eval_service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <utility>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/log_fields.h"
#include "common/ops_observer.h"
#include "common/status_macros.h"
#include "resident/load_request.h"
#include "resident/resource.h"
#include "service/proto_convert.h"
#include "service/request_parser.h"
#include "service/status_convert.h"
#include "service/watch_reactor.h"

namespace dflash::service {
namespace {

using Clock = std::chrono::steady_clock;

// The client's x-request-id metadata, else a per-process sequence number.
std::string RequestId(const grpc::CallbackServerContext* ctx) {
  const auto& md = ctx->client_metadata();
  if (auto it = md.find("x-request-id"); it != md.end()) {
    return std::string(it->second.data(), std::min<size_t>(it->second.size(), 128));
  }
  static std::atomic<uint64_t> next{1};
  return absl::StrCat("r", next.fetch_add(1));
}

// Logs one line per call: method, peer, status, duration.
void LogCall(const char* method, const grpc::CallbackServerContext* ctx, const absl::Status& status,
             Clock::time_point start) {
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  ScopedLogFields fields({{"method", method},
                          {"peer", ctx->peer()},
                          {"request_id", RequestId(ctx)},
                          {"code", absl::StatusCodeToString(status.code())},
                          {"duration_ms", ms}});
  Ops().OnRpc(method, status.code(), ms / 1000);
  if (status.ok()) {
    spdlog::info("rpc {} peer={} status=OK duration_ms={:.1f}", method, ctx->peer(), ms);
  } else {
    spdlog::warn("rpc {} peer={} status={} duration_ms={:.1f} message=\"{}\"", method, ctx->peer(),
                 absl::StatusCodeToString(status.code()), ms, BoundedMessage(status.message()));
  }
}

absl::Status JobsMissing() {
  return absl::UnimplementedError("this server was started without a job service");
}

}  // namespace

EvalService::EvalService(core::EvalCore& core, core::JobService* jobs, int workers,
                         ServiceOptions options)
    : core_(core), jobs_(jobs), options_(options), pool_(workers) {}

EvalService::~EvalService() = default;

absl::Status EvalService::Authorize(const Ctx* ctx, const char* method) const {
  if (options_.auth == nullptr) return absl::OkStatus();
  return options_.auth->Check(ctx->client_metadata(), method);
}

template <typename Req, typename Resp>
grpc::ServerUnaryReactor* EvalService::Unary(const char* method, Where where,
                                             Handler<Req, Resp> handler, Ctx* ctx, const Bytes* raw,
                                             Bytes* out) {
  const Clock::time_point start = Clock::now();
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  auto finish = [ctx, reactor, method, start](const absl::Status& status) {
    LogCall(method, ctx, status, start);
    reactor->Finish(ToGrpcStatus(status));
  };
  if (absl::Status auth = Authorize(ctx, method); !auth.ok()) {
    finish(auth);
    return reactor;
  }
  auto req = std::make_shared<Req>();
  if (absl::Status parsed = ParseRequest(*raw, req.get()); !parsed.ok()) {
    finish(parsed);
    return reactor;
  }
  if (where == Where::kJobs && jobs_ == nullptr) {
    finish(JobsMissing());
    return reactor;
  }
  auto work = [this, ctx, req, out, handler, finish, where] {
    Resp resp;
    absl::Status status;
    if (where != Where::kInline && ctx->IsCancelled()) {
      status = absl::CancelledError("the client cancelled the call");
    } else {
      status = (this->*handler)(ctx, *req, &resp);
    }
    if (status.ok()) *out = ToByteBuffer(resp);
    finish(status);
  };
  if (where == Where::kInline) {
    work();
  } else if (!pool_.Post(std::move(work))) {
    finish(absl::UnavailableError("the server is shutting down"));
  }
  return reactor;
}

grpc::ServerUnaryReactor* EvalService::GetServerInfo(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("GetServerInfo", Where::kInline, &EvalService::HandleGetServerInfo, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::ValidateCheckpoint(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("ValidateCheckpoint", Where::kPool, &EvalService::HandleValidateCheckpoint, ctx, req,
               resp);
}

grpc::ServerUnaryReactor* EvalService::LoadDrafter(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("LoadDrafter", Where::kPool, &EvalService::HandleLoadDrafter, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::UnloadDrafter(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("UnloadDrafter", Where::kPool, &EvalService::HandleUnloadDrafter, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::LoadTarget(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("LoadTarget", Where::kPool, &EvalService::HandleLoadTarget, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::UnloadTarget(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("UnloadTarget", Where::kPool, &EvalService::HandleUnloadTarget, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::LoadDataset(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("LoadDataset", Where::kPool, &EvalService::HandleLoadDataset, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::UnloadDataset(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("UnloadDataset", Where::kPool, &EvalService::HandleUnloadDataset, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::ListResources(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("ListResources", Where::kInline, &EvalService::HandleListResources, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::RunEval(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("RunEval", Where::kPool, &EvalService::HandleRunEval, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::SubmitEval(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("SubmitEval", Where::kJobs, &EvalService::HandleSubmitEval, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::GetEval(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("GetEval", Where::kJobs, &EvalService::HandleGetEval, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::ListEvals(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("ListEvals", Where::kJobs, &EvalService::HandleListEvals, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::CancelEval(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("CancelEval", Where::kJobs, &EvalService::HandleCancelEval, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::ResubmitEval(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("ResubmitEval", Where::kJobs, &EvalService::HandleResubmitEval, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::CompareEvals(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("CompareEvals", Where::kJobs, &EvalService::HandleCompareEvals, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::ExportProfile(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("ExportProfile", Where::kJobs, &EvalService::HandleExportProfile, ctx, req, resp);
}

grpc::ServerUnaryReactor* EvalService::CalibrateEval(Ctx* ctx, const Bytes* req, Bytes* resp) {
  return Unary("CalibrateEval", Where::kJobs, &EvalService::HandleCalibrateEval, ctx, req, resp);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* EvalService::WatchEval(Ctx* ctx, const Bytes* raw) {
  absl::Status refused = Authorize(ctx, "WatchEval");
  pb::WatchEvalRequest req;
  if (refused.ok()) refused = ParseRequest(*raw, &req);
  if (refused.ok() && jobs_ != nullptr) refused = CheckId("id", req.id());
  std::atomic<int>* counter = nullptr;
  if (refused.ok()) {
    const int open = open_watch_streams_.fetch_add(1) + 1;
    counter = &open_watch_streams_;
    if (options_.max_watch_streams > 0 && open > options_.max_watch_streams) {
      refused = absl::ResourceExhaustedError(absl::StrCat(
          "too many WatchEval streams open (", open - 1, "); the server allows ",
          options_.max_watch_streams, " (--max-concurrent-streams); poll with GetEval instead"));
    }
  }
  return new WatchReactor(jobs_, ctx, req.id(), refused, counter);
}

absl::Status EvalService::HandleGetServerInfo(Ctx*, const pb::GetServerInfoRequest&,
                                              pb::ServerInfo* resp) {
  core::ServerInfo info = core_.GetServerInfo();
  if (jobs_) {
    info.queued_jobs = jobs_->queued();
    info.running_jobs = jobs_->running();
  }
  ToProto(info, resp);
  if (jobs_) {
    // A single-host store has no fleet (Unimplemented): nothing to add.
    absl::StatusOr<std::vector<core::FleetMember>> fleet = jobs_->Fleet();
    if (fleet.ok()) {
      for (const core::FleetMember& m : *fleet) ToProto(m, resp->add_fleet());
    }
  }
  return absl::OkStatus();
}

absl::Status EvalService::HandleValidateCheckpoint(Ctx*, const pb::ValidateCheckpointRequest& req,
                                                   pb::ValidateCheckpointResponse* resp) {
  ASSIGN_OR_RETURN(resident::ValidateParams params, FromProto(req));
  ASSIGN_OR_RETURN(weights::WeightReport report, core_.ValidateCheckpoint(params));
  ToProto(report, resp->mutable_report());
  return absl::OkStatus();
}

absl::Status EvalService::HandleLoadDrafter(Ctx*, const pb::LoadDrafterRequest& req,
                                            pb::LoadResponse* resp) {
  ASSIGN_OR_RETURN(resident::LoadDrafterParams params, FromProto(req));
  ASSIGN_OR_RETURN(resident::LoadResult result, core_.LoadDrafter(params));
  ToProto(result, resp);
  return absl::OkStatus();
}

absl::Status EvalService::HandleLoadTarget(Ctx*, const pb::LoadTargetRequest& req,
                                           pb::LoadResponse* resp) {
  ASSIGN_OR_RETURN(resident::LoadTargetParams params, FromProto(req));
  ASSIGN_OR_RETURN(resident::LoadResult result, core_.LoadTarget(params));
  ToProto(result, resp);
  return absl::OkStatus();
}

absl::Status EvalService::HandleLoadDataset(Ctx*, const pb::LoadDatasetRequest& req,
                                            pb::LoadResponse* resp) {
  ASSIGN_OR_RETURN(resident::LoadDatasetParams params, FromProto(req));
  ASSIGN_OR_RETURN(resident::LoadResult result, core_.LoadDataset(params));
  ToProto(result, resp);
  return absl::OkStatus();
}

absl::Status EvalService::Unload(resident::ResourceKind kind, const pb::UnloadRequest& req,
                                 pb::UnloadResponse* resp) {
  RETURN_IF_ERROR(CheckId("name", req.name()));
  auto info = jobs_ ? jobs_->Unload(kind, req.name()) : core_.Unload(kind, req.name());
  if (!info.ok()) return info.status();
  ToProto(*info, resp->mutable_resource());
  return absl::OkStatus();
}

absl::Status EvalService::HandleUnloadDrafter(Ctx*, const pb::UnloadRequest& req,
                                              pb::UnloadResponse* resp) {
  return Unload(resident::ResourceKind::kDrafter, req, resp);
}

absl::Status EvalService::HandleUnloadTarget(Ctx*, const pb::UnloadRequest& req,
                                             pb::UnloadResponse* resp) {
  return Unload(resident::ResourceKind::kTarget, req, resp);
}

absl::Status EvalService::HandleUnloadDataset(Ctx*, const pb::UnloadRequest& req,
                                              pb::UnloadResponse* resp) {
  return Unload(resident::ResourceKind::kDataset, req, resp);
}

absl::Status EvalService::HandleListResources(Ctx*, const pb::ListResourcesRequest& req,
                                              pb::ListResourcesResponse* resp) {
  std::optional<resident::ResourceKind> kind;
  if (req.kind() != pb::RESOURCE_KIND_UNSPECIFIED) {
    ASSIGN_OR_RETURN(kind, KindFromProto(req.kind()));
  }
  for (const resident::ResourceInfo& r : core_.ListResources(kind)) {
    ToProto(r, resp->add_resources());
  }
  if (!req.fleet()) return absl::OkStatus();
  absl::StatusOr<std::vector<core::FleetMember>> fleet =
      jobs_ ? jobs_->Fleet() : absl::UnimplementedError("no job service");
  if (absl::IsUnimplemented(fleet.status())) {
    return absl::FailedPreconditionError(
        "--fleet: this server has no fleet (its results store is not a shared PostgreSQL "
        "database; see --store)");
  }
  if (!fleet.ok()) return fleet.status();
  for (const core::FleetMember& m : *fleet) ToProto(m, resp->add_fleet());
  return absl::OkStatus();
}

absl::Status EvalService::HandleRunEval(Ctx* ctx, const pb::RunEvalRequest& req,
                                        pb::EvalResult* resp) {
  if (!req.has_request()) return absl::InvalidArgumentError("request is required");
  ASSIGN_OR_RETURN(types::EvalParams params, FromProto(req.request()));
  // A client that hangs up stops the evaluation at the next chunk.
  ASSIGN_OR_RETURN(
      types::EvalResult result,
      core_.RunEval(params, [ctx](const types::EvalProgress&) { return !ctx->IsCancelled(); }));
  ToProto(result, resp);
  return absl::OkStatus();
}

absl::Status EvalService::HandleSubmitEval(Ctx*, const pb::SubmitEvalRequest& req,
                                           pb::EvalJob* resp) {
  if (!req.has_request()) return absl::InvalidArgumentError("request is required");
  ASSIGN_OR_RETURN(types::JobRequest request, JobRequestFromProto(req.request()));
  ASSIGN_OR_RETURN(types::JobRecord job, jobs_->Submit(std::move(request)));
  ToProto(job, resp);
  return absl::OkStatus();
}

absl::Status EvalService::HandleGetEval(Ctx*, const pb::GetEvalRequest& req, pb::EvalJob* resp) {
  RETURN_IF_ERROR(CheckId("id", req.id()));
  ASSIGN_OR_RETURN(types::JobRecord job, jobs_->Get(req.id()));
  ToProto(job, resp);
  return absl::OkStatus();
}

absl::Status EvalService::HandleListEvals(Ctx*, const pb::ListEvalsRequest& req,
                                          pb::ListEvalsResponse* resp) {
  ASSIGN_OR_RETURN(types::ListQuery query, FromProto(req));
  ASSIGN_OR_RETURN(types::JobPage page, jobs_->List(query));
  for (const types::JobRecord& j : page.jobs) ToProto(j, resp->add_jobs());
  resp->set_next_page_token(page.next_page_token);
  return absl::OkStatus();
}

absl::Status EvalService::HandleCancelEval(Ctx*, const pb::CancelEvalRequest& req,
                                           pb::EvalJob* resp) {
  RETURN_IF_ERROR(CheckId("id", req.id()));
  ASSIGN_OR_RETURN(types::JobRecord job, jobs_->Cancel(req.id()));
  ToProto(job, resp);
  return absl::OkStatus();
}

absl::Status EvalService::HandleResubmitEval(Ctx*, const pb::ResubmitEvalRequest& req,
                                             pb::EvalJob* resp) {
  RETURN_IF_ERROR(CheckId("id", req.id()));
  ASSIGN_OR_RETURN(types::JobRecord job, jobs_->Resubmit(req.id()));
  ToProto(job, resp);
  return absl::OkStatus();
}

absl::Status EvalService::HandleCompareEvals(Ctx*, const pb::CompareEvalsRequest& req,
                                             pb::CompareEvalsResponse* resp) {
  ASSIGN_OR_RETURN(std::vector<std::string> ids, JobIdsFromProto(req));
  ASSIGN_OR_RETURN(core::CompareOptions options, CompareOptionsFromProto(req));
  ASSIGN_OR_RETURN(core::Comparison comparison, jobs_->Compare(ids, options));
  ToProto(comparison, resp);
  return absl::OkStatus();
}

absl::Status EvalService::HandleExportProfile(Ctx*, const pb::ExportProfileRequest& req,
                                              pb::ExportProfileResponse* resp) {
  RETURN_IF_ERROR(CheckId("id", req.id()));
  RETURN_IF_ERROR(NonNegative("setting", req.setting()));
  ASSIGN_OR_RETURN(core::JobService::ProfileExport profile,
                   jobs_->ExportProfile(req.id(), req.format(), req.setting()));
  resp->set_format(req.format());
  resp->set_curve(profile.curve);
  resp->set_profile_json(std::move(profile.text));
  return absl::OkStatus();
}

absl::Status EvalService::HandleCalibrateEval(Ctx*, const pb::CalibrateEvalRequest& req,
                                              pb::CalibrateEvalResponse* resp) {
  RETURN_IF_ERROR(CheckId("id", req.id()));
  RETURN_IF_ERROR(NonNegative("setting", req.setting()));
  std::vector<std::pair<std::string, std::string>> files;
  for (const pb::ServedFile& f : req.served()) files.emplace_back(f.path(), f.contents());
  ASSIGN_OR_RETURN(core::JobService::CalibrationResult r,
                   jobs_->Calibrate(req.id(), files, req.setting()));
  ToProto(r.calibration, resp->mutable_calibration());
  ToProto(r.job, resp->mutable_job());
  return absl::OkStatus();
}

}  // namespace dflash::service
