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

EvalService::EvalService(core::EvalCore& core, int workers) : core_(core), pool_(workers) {}

EvalService::~EvalService() = default;

template <typename Work>
grpc::ServerUnaryReactor* EvalService::Offload(Ctx* ctx, const char* method, Work work) {
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
  const Clock::time_point start = Clock::now();
  ToProto(core_.GetServerInfo(), resp);
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
    auto info = core_.Unload(kind, req->name());
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

}  // namespace dflash::service
