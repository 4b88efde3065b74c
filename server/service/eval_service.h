// File: eval_service.h
// dflash.eval.v1.DrafterEval over gRPC's callback API. Each method parses
// the request strictly (request_parser.h), turns it into core types, calls
// the EvalCore, turns the answer back into proto and logs the call once with
// its status and duration. Work that can take long (loads, evaluations) runs
// on a WorkerPool, never on gRPC's callback threads.
//
// The methods are registered as raw callbacks (bytes in, bytes out) rather
// than through the generated typed CallbackService: gRPC answers a typed
// request it cannot parse with UNIMPLEMENTED and an empty message, and
// protobuf's parser drops a field sent with the wrong wire type without a
// word. Here both are INVALID_ARGUMENT naming the field.
#pragma once

#include <atomic>
#include <memory>

#include "core/eval_core.h"
#include "core/job_service.h"
#include "dflash/eval/v1/service.grpc.pb.h"
#include "service/token_auth.h"
#include "service/worker_pool.h"

namespace dflash::service {

namespace pb = ::dflash::eval::v1;

struct ServiceOptions {
  // Null: no authentication (loopback only, or --insecure-allow-remote).
  const TokenAuth* auth = nullptr;
  // WatchEval streams open at once; past it RESOURCE_EXHAUSTED. 0: no limit.
  int max_watch_streams = 0;
};

class EvalService final : public ::dflash::eval::v1::DrafterEval::Service {
 public:
  // `core` and `jobs` must outlive the service. `workers`: threads for long
  // calls. Without `jobs` the job RPCs answer UNIMPLEMENTED and unloads go
  // straight to the core.
  EvalService(core::EvalCore& core, core::JobService* jobs, int workers,
              ServiceOptions options = {});
  EvalService(core::EvalCore& core, int workers) : EvalService(core, nullptr, workers) {}
  ~EvalService() override;

 private:
  using Ctx = grpc::CallbackServerContext;
  // Where a unary method's work runs: on gRPC's callback thread (quick
  // reads), on the worker pool, or on the pool and only with a job service.
  enum class Where { kInline, kPool, kJobs };
  template <typename Req, typename Resp>
  using Handler = absl::Status (EvalService::*)(Ctx*, const Req&, Resp*);

  // Registers `handler` as the raw callback of the method named `method`.
  template <typename Req, typename Resp>
  void AddUnary(const char* method, Where where, Handler<Req, Resp> handler);
  void AddWatchEval();

  // One per method: check what the request means, call the core or the job
  // service, fill `resp`.
  absl::Status HandleGetServerInfo(Ctx*, const pb::GetServerInfoRequest&, pb::ServerInfo*);
  absl::Status HandleValidateCheckpoint(Ctx*, const pb::ValidateCheckpointRequest&,
                                        pb::ValidateCheckpointResponse*);
  absl::Status HandleLoadDrafter(Ctx*, const pb::LoadDrafterRequest&, pb::LoadResponse*);
  absl::Status HandleLoadTarget(Ctx*, const pb::LoadTargetRequest&, pb::LoadResponse*);
  absl::Status HandleLoadDataset(Ctx*, const pb::LoadDatasetRequest&, pb::LoadResponse*);
  absl::Status HandleUnloadDrafter(Ctx*, const pb::UnloadRequest&, pb::UnloadResponse*);
  absl::Status HandleUnloadTarget(Ctx*, const pb::UnloadRequest&, pb::UnloadResponse*);
  absl::Status HandleUnloadDataset(Ctx*, const pb::UnloadRequest&, pb::UnloadResponse*);
  absl::Status Unload(core::ResourceKind kind, const pb::UnloadRequest& req,
                      pb::UnloadResponse* resp);
  absl::Status HandleListResources(Ctx*, const pb::ListResourcesRequest&,
                                   pb::ListResourcesResponse*);
  absl::Status HandleRunEval(Ctx*, const pb::RunEvalRequest&, pb::EvalResult*);
  absl::Status HandleSubmitEval(Ctx*, const pb::SubmitEvalRequest&, pb::EvalJob*);
  absl::Status HandleGetEval(Ctx*, const pb::GetEvalRequest&, pb::EvalJob*);
  absl::Status HandleListEvals(Ctx*, const pb::ListEvalsRequest&, pb::ListEvalsResponse*);
  absl::Status HandleCancelEval(Ctx*, const pb::CancelEvalRequest&, pb::EvalJob*);
  absl::Status HandleResubmitEval(Ctx*, const pb::ResubmitEvalRequest&, pb::EvalJob*);
  absl::Status HandleCompareEvals(Ctx*, const pb::CompareEvalsRequest&, pb::CompareEvalsResponse*);

  // Ok, or why the caller may not call `method` (token_auth.h).
  absl::Status Authorize(const Ctx* ctx, const char* method) const;

  core::EvalCore& core_;
  core::JobService* jobs_;
  ServiceOptions options_;
  std::atomic<int> open_watch_streams_{0};
  WorkerPool pool_;
};

}  // namespace dflash::service
