#include "service/eval_service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <utility>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "common/log_fields.h"
#include "common/ops_observer.h"
#include "service/proto_convert.h"
#include "service/watch_reactor.h"
#include "service/status_convert.h"

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
void LogCall(const char* method, const grpc::CallbackServerContext* ctx,
             const absl::Status& status, Clock::time_point start) {
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
    spdlog::warn("rpc {} peer={} status={} duration_ms={:.1f} message=\"{}\"", method,
                 ctx->peer(), absl::StatusCodeToString(status.code()), ms,
                 std::string(status.message()));
  }
}

}  // namespace

EvalService::EvalService(core::EvalCore& core, core::JobService* jobs, int workers,
                         ServiceOptions options)
    : core_(core), jobs_(jobs), options_(options), pool_(workers) {}

absl::Status EvalService::Authorize(const Ctx* ctx, const char* method) const {
  if (options_.auth == nullptr) return absl::OkStatus();
  return options_.auth->Check(ctx->client_metadata(), method);
}

grpc::ServerUnaryReactor* EvalService::Refuse(Ctx* ctx, const char* method,
                                              const absl::Status& status) {
  LogCall(method, ctx, status, Clock::now());
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

EvalService::~EvalService() = default;

template <typename Work>
grpc::ServerUnaryReactor* EvalService::Offload(Ctx* ctx, const char* method, Work work) {
  if (absl::Status auth = Authorize(ctx, method); !auth.ok()) return Refuse(ctx, method, auth);
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  const Clock::time_point start = Clock::now();
  const bool posted = pool_.Post([ctx, reactor, method, start, work = std::move(work)]() mutable {
    absl::Status status;
    if (ctx->IsCancelled()) {
      status = absl::CancelledError("the client cancelled the call");
    } else {
      status = work();
    }
    LogCall(method, ctx, status, start);
    reactor->Finish(ToGrpcStatus(status));
  });
  if (!posted) {
    absl::Status status = absl::UnavailableError("the server is shutting down");
    LogCall(method, ctx, status, start);
    reactor->Finish(ToGrpcStatus(status));
  }
  return reactor;
}

grpc::ServerUnaryReactor* EvalService::GetServerInfo(
    Ctx* ctx, const ::dflash::eval::v1::GetServerInfoRequest*,
    ::dflash::eval::v1::ServerInfo* resp) {
  if (absl::Status auth = Authorize(ctx, "GetServerInfo"); !auth.ok()) {
    return Refuse(ctx, "GetServerInfo", auth);
  }
  const Clock::time_point start = Clock::now();
  core::ServerInfo info = core_.GetServerInfo();
  if (jobs_) {
    info.queued_jobs = jobs_->queued();
    info.running_jobs = jobs_->running();
  }
  ToProto(info, resp);
  LogCall("GetServerInfo", ctx, absl::OkStatus(), start);
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* EvalService::ValidateCheckpoint(
    Ctx* ctx, const ::dflash::eval::v1::ValidateCheckpointRequest* req,
    ::dflash::eval::v1::ValidateCheckpointResponse* resp) {
  return Offload(ctx, "ValidateCheckpoint", [this, req, resp]() -> absl::Status {
    core::ValidateParams p{req->path(), req->config_path(), req->allow_unexpected(),
                           req->compute_stats()};
    auto report = core_.ValidateCheckpoint(p);
    if (!report.ok()) return report.status();
    ToProto(*report, resp->mutable_report());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* EvalService::LoadDrafter(
    Ctx* ctx, const ::dflash::eval::v1::LoadDrafterRequest* req,
    ::dflash::eval::v1::LoadResponse* resp) {
  return Offload(ctx, "LoadDrafter", [this, req, resp]() -> absl::Status {
    core::LoadDrafterParams p;
    p.name = req->name();
    p.path = req->path();
    p.config_path = req->config_path();
    p.dtype = DTypeFromProto(req->dtype());
    p.device = req->device();
    p.allow_unexpected = req->allow_unexpected();
    auto result = core_.LoadDrafter(p);
    if (!result.ok()) return result.status();
    ToProto(*result, resp);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* EvalService::LoadTarget(
    Ctx* ctx, const ::dflash::eval::v1::LoadTargetRequest* req,
    ::dflash::eval::v1::LoadResponse* resp) {
  return Offload(ctx, "LoadTarget", [this, req, resp]() -> absl::Status {
    core::LoadTargetParams p;
    p.name = req->name();
    p.path = req->path();
    p.dtype = DTypeFromProto(req->dtype());
    p.device = req->device();
    p.load_final_norm = req->load_final_norm();
    auto result = core_.LoadTarget(p);
    if (!result.ok()) return result.status();
    ToProto(*result, resp);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* EvalService::LoadDataset(
    Ctx* ctx, const ::dflash::eval::v1::LoadDatasetRequest* req,
    ::dflash::eval::v1::LoadResponse* resp) {
  return Offload(ctx, "LoadDataset", [this, req, resp]() -> absl::Status {
    core::LoadDatasetParams p;
    p.name = req->name();
    p.path = req->path();
    p.dtype = DTypeFromProto(req->dtype());
    p.device = req->device();
    p.max_samples = req->max_samples();
    p.skip_bad_samples = req->skip_bad_samples();
    if (p.max_samples < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("max_samples must be >= 0; got ", p.max_samples));
    }
    for (const auto& [key, ids] : req->layer_ids()) {
      p.layer_ids[key] = std::vector<int>(ids.ids().begin(), ids.ids().end());
    }
    auto result = core_.LoadDataset(p);
    if (!result.ok()) return result.status();
    ToProto(*result, resp);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* EvalService::Unload(Ctx* ctx, const char* method,
                                              core::ResourceKind kind,
                                              const ::dflash::eval::v1::UnloadRequest* req,
                                              ::dflash::eval::v1::UnloadResponse* resp) {
  return Offload(ctx, method, [this, kind, req, resp]() -> absl::Status {
    auto info = jobs_ ? jobs_->Unload(kind, req->name()) : core_.Unload(kind, req->name());
    if (!info.ok()) return info.status();
    ToProto(*info, resp->mutable_resource());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* EvalService::UnloadDrafter(Ctx* ctx,
                                                     const ::dflash::eval::v1::UnloadRequest* req,
                                                     ::dflash::eval::v1::UnloadResponse* resp) {
  return Unload(ctx, "UnloadDrafter", core::ResourceKind::kDrafter, req, resp);
}

grpc::ServerUnaryReactor* EvalService::UnloadTarget(Ctx* ctx,
                                                    const ::dflash::eval::v1::UnloadRequest* req,
                                                    ::dflash::eval::v1::UnloadResponse* resp) {
  return Unload(ctx, "UnloadTarget", core::ResourceKind::kTarget, req, resp);
}

grpc::ServerUnaryReactor* EvalService::UnloadDataset(Ctx* ctx,
                                                     const ::dflash::eval::v1::UnloadRequest* req,
                                                     ::dflash::eval::v1::UnloadResponse* resp) {
  return Unload(ctx, "UnloadDataset", core::ResourceKind::kDataset, req, resp);
}

grpc::ServerUnaryReactor* EvalService::ListResources(
    Ctx* ctx, const ::dflash::eval::v1::ListResourcesRequest* req,
    ::dflash::eval::v1::ListResourcesResponse* resp) {
  if (absl::Status auth = Authorize(ctx, "ListResources"); !auth.ok()) {
    return Refuse(ctx, "ListResources", auth);
  }
  const Clock::time_point start = Clock::now();
  absl::Status status;
  std::optional<core::ResourceKind> kind;
  if (req->kind() != ::dflash::eval::v1::RESOURCE_KIND_UNSPECIFIED) {
    auto k = KindFromProto(req->kind());
    if (k.ok()) kind = *k; else status = k.status();
  }
  if (status.ok()) {
    for (const core::ResourceInfo& r : core_.ListResources(kind)) {
      ToProto(r, resp->add_resources());
    }
  }
  LogCall("ListResources", ctx, status, start);
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerUnaryReactor* EvalService::RunEval(Ctx* ctx,
                                               const ::dflash::eval::v1::RunEvalRequest* req,
                                               ::dflash::eval::v1::EvalResult* resp) {
  return Offload(ctx, "RunEval", [this, ctx, req, resp]() -> absl::Status {
    auto params = FromProto(req->request());
    if (!params.ok()) return params.status();
    // A client that hangs up stops the evaluation at the next chunk.
    auto result = core_.RunEval(*params, [ctx](const eval::EvalProgress&) {
      return !ctx->IsCancelled();
    });
    if (!result.ok()) return result.status();
    ToProto(*result, resp);
    return absl::OkStatus();
  });
}

template <typename Work>
grpc::ServerUnaryReactor* EvalService::OffloadJob(Ctx* ctx, const char* method, Work work) {
  if (jobs_ == nullptr) {
    return Offload(ctx, method, [] {
      return absl::UnimplementedError("this server was started without a job service");
    });
  }
  return Offload(ctx, method, std::move(work));
}

grpc::ServerUnaryReactor* EvalService::SubmitEval(
    Ctx* ctx, const ::dflash::eval::v1::SubmitEvalRequest* req,
    ::dflash::eval::v1::EvalJob* resp) {
  return OffloadJob(ctx, "SubmitEval", [this, req, resp]() -> absl::Status {
    auto request = JobRequestFromProto(req->request());
    if (!request.ok()) return request.status();
    auto job = jobs_->Submit(*std::move(request));
    if (!job.ok()) return job.status();
    ToProto(*job, resp);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* EvalService::GetEval(Ctx* ctx,
                                               const ::dflash::eval::v1::GetEvalRequest* req,
                                               ::dflash::eval::v1::EvalJob* resp) {
  return OffloadJob(ctx, "GetEval", [this, req, resp]() -> absl::Status {
    if (req->id().empty()) return absl::InvalidArgumentError("id is empty");
    auto job = jobs_->Get(req->id());
    if (!job.ok()) return job.status();
    ToProto(*job, resp);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* EvalService::ListEvals(
    Ctx* ctx, const ::dflash::eval::v1::ListEvalsRequest* req,
    ::dflash::eval::v1::ListEvalsResponse* resp) {
  return OffloadJob(ctx, "ListEvals", [this, req, resp]() -> absl::Status {
    auto query = FromProto(*req);
    if (!query.ok()) return query.status();
    auto page = jobs_->List(*query);
    if (!page.ok()) return page.status();
    for (const store::JobRecord& j : page->jobs) ToProto(j, resp->add_jobs());
    resp->set_next_page_token(page->next_page_token);
    return absl::OkStatus();
  });
}

grpc::ServerWriteReactor<::dflash::eval::v1::EvalJob>* EvalService::WatchEval(
    Ctx* ctx, const ::dflash::eval::v1::WatchEvalRequest* req) {
  absl::Status refused = Authorize(ctx, "WatchEval");
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
  return new WatchReactor(jobs_, ctx, req->id(), refused, counter);
}

grpc::ServerUnaryReactor* EvalService::CancelEval(
    Ctx* ctx, const ::dflash::eval::v1::CancelEvalRequest* req,
    ::dflash::eval::v1::EvalJob* resp) {
  return OffloadJob(ctx, "CancelEval", [this, req, resp]() -> absl::Status {
    if (req->id().empty()) return absl::InvalidArgumentError("id is empty");
    auto job = jobs_->Cancel(req->id());
    if (!job.ok()) return job.status();
    ToProto(*job, resp);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* EvalService::ResubmitEval(
    Ctx* ctx, const ::dflash::eval::v1::ResubmitEvalRequest* req,
    ::dflash::eval::v1::EvalJob* resp) {
  return OffloadJob(ctx, "ResubmitEval", [this, req, resp]() -> absl::Status {
    if (req->id().empty()) return absl::InvalidArgumentError("id is empty");
    auto job = jobs_->Resubmit(req->id());
    if (!job.ok()) return job.status();
    ToProto(*job, resp);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* EvalService::CompareEvals(
    Ctx* ctx, const ::dflash::eval::v1::CompareEvalsRequest* req,
    ::dflash::eval::v1::CompareEvalsResponse* resp) {
  return OffloadJob(ctx, "CompareEvals", [this, req, resp]() -> absl::Status {
    auto comparison = jobs_->Compare(std::vector<std::string>(req->ids().begin(), req->ids().end()));
    if (!comparison.ok()) return comparison.status();
    ToProto(*comparison, resp);
    return absl::OkStatus();
  });
}

}  // namespace dflash::service
