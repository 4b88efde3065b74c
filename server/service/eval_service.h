// File: eval_service.h
// dflash.eval.v1.DrafterEval over gRPC's callback API. Each method parses
// the request strictly (request_parser.h), turns it into core types, calls
// the EvalCore, turns the answer back into proto and logs the call once with
// its status and duration. Work that can take long (loads, evaluations) runs
// on a WorkerPool, never on gRPC's callback threads.
//
// The service derives from the generated raw callback methods
// (DrafterEval::WithRawCallbackMethod_*, gRPC's public callback API): each
// RPC is one override taking the request's bytes, answering through a reactor
// of grpc::CallbackServerContext. Raw rather than the typed CallbackService:
// gRPC answers a typed request it cannot parse with UNIMPLEMENTED and an
// empty message, and protobuf's parser drops a field sent with the wrong wire
// type without a word. Here both are INVALID_ARGUMENT naming the field
// (request_parser.h).
#pragma once

#include <atomic>
#include <memory>

#include "core/eval_core.h"
#include "core/job_service.h"
#include "dflash/eval/v1/service.grpc.pb.h"
#include "resident/resource.h"
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

// Every DrafterEval method as a raw (bytes in, bytes out) callback method.
using RawCallbackService = pb::DrafterEval::WithRawCallbackMethod_GetServerInfo<
    pb::DrafterEval::WithRawCallbackMethod_ValidateCheckpoint<pb::DrafterEval::WithRawCallbackMethod_LoadDrafter<
        pb::DrafterEval::WithRawCallbackMethod_UnloadDrafter<pb::DrafterEval::WithRawCallbackMethod_LoadTarget<
            pb::DrafterEval::WithRawCallbackMethod_UnloadTarget<pb::DrafterEval::WithRawCallbackMethod_LoadDataset<
                pb::DrafterEval::WithRawCallbackMethod_UnloadDataset<
                    pb::DrafterEval::WithRawCallbackMethod_ListResources<
                        pb::DrafterEval::WithRawCallbackMethod_RunEval<
                            pb::DrafterEval::WithRawCallbackMethod_SubmitEval<
                                pb::DrafterEval::WithRawCallbackMethod_GetEval<
                                    pb::DrafterEval::WithRawCallbackMethod_ListEvals<
                                        pb::DrafterEval::WithRawCallbackMethod_WatchEval<
                                            pb::DrafterEval::WithRawCallbackMethod_CancelEval<
                                                pb::DrafterEval::WithRawCallbackMethod_ResubmitEval<
                                                    pb::DrafterEval::WithRawCallbackMethod_CompareEvals<
                                                        pb::DrafterEval::
                                                            WithRawCallbackMethod_ExportProfile<
                                                                pb::DrafterEval::
                                                                    WithRawCallbackMethod_CalibrateEval<
                                                                        pb::DrafterEval::
                                                                            Service>>>>>>>>>>>>>>>>>>>;

class EvalService final : public RawCallbackService {
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
  using Bytes = grpc::ByteBuffer;
  using UnaryReactor = grpc::ServerUnaryReactor;

  // The generated raw methods, one per RPC; each hands its handler to Unary.
  UnaryReactor* GetServerInfo(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* ValidateCheckpoint(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* LoadDrafter(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* UnloadDrafter(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* LoadTarget(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* UnloadTarget(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* LoadDataset(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* UnloadDataset(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* ListResources(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* RunEval(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* SubmitEval(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* GetEval(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* ListEvals(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  grpc::ServerWriteReactor<Bytes>* WatchEval(Ctx* ctx, const Bytes* raw) override;
  UnaryReactor* CancelEval(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* ResubmitEval(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* CompareEvals(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* ExportProfile(Ctx* ctx, const Bytes* req, Bytes* resp) override;
  UnaryReactor* CalibrateEval(Ctx* ctx, const Bytes* req, Bytes* resp) override;

  // Where a unary method's work runs: on gRPC's callback thread (quick
  // reads), on the worker pool, or on the pool and only with a job service.
  enum class Where { kInline, kPool, kJobs };
  template <typename Req, typename Resp>
  using Handler = absl::Status (EvalService::*)(Ctx*, const Req&, Resp*);

  // One unary call: authorize, parse `raw` strictly, run `handler` where
  // `where` says, serialize into `out`, log, finish the default reactor.
  template <typename Req, typename Resp>
  UnaryReactor* Unary(const char* method, Where where, Handler<Req, Resp> handler, Ctx* ctx,
                      const Bytes* raw, Bytes* out);

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
  absl::Status Unload(resident::ResourceKind kind, const pb::UnloadRequest& req,
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
  absl::Status HandleExportProfile(Ctx*, const pb::ExportProfileRequest&,
                                   pb::ExportProfileResponse*);
  absl::Status HandleCalibrateEval(Ctx*, const pb::CalibrateEvalRequest&,
                                   pb::CalibrateEvalResponse*);

  // Ok, or why the caller may not call `method` (token_auth.h).
  absl::Status Authorize(const Ctx* ctx, const char* method) const;

  core::EvalCore& core_;
  core::JobService* jobs_;
  ServiceOptions options_;
  std::atomic<int> open_watch_streams_{0};
  WorkerPool pool_;
};

}  // namespace dflash::service
