// File: eval_service.h
// dflash.eval.v1.DrafterEval over gRPC's callback API. Each method turns the
// request into core types, calls the EvalCore, turns the answer back into
// proto and logs the call once with its status and duration. Work that can
// take long (loads, evaluations) runs on a WorkerPool, never on gRPC's
// callback threads.
#pragma once

#include <atomic>
#include <memory>

#include "core/eval_core.h"
#include "core/job_service.h"
#include "dflash/eval/v1/service.grpc.pb.h"
#include "service/token_auth.h"
#include "service/worker_pool.h"

namespace dflash::service {

struct ServiceOptions {
  // Null: no authentication (loopback only, or --insecure-allow-remote).
  const TokenAuth* auth = nullptr;
  // WatchEval streams open at once; past it RESOURCE_EXHAUSTED. 0: no limit.
  int max_watch_streams = 0;
};

class EvalService final : public ::dflash::eval::v1::DrafterEval::CallbackService {
 public:
  // `core` and `jobs` must outlive the service. `workers`: threads for long
  // calls. Without `jobs` the job RPCs answer UNIMPLEMENTED and unloads go
  // straight to the core.
  EvalService(core::EvalCore& core, core::JobService* jobs, int workers,
              ServiceOptions options = {});
  EvalService(core::EvalCore& core, int workers) : EvalService(core, nullptr, workers) {}
  ~EvalService() override;

  using ServerUnaryReactor = grpc::ServerUnaryReactor;
  using Ctx = grpc::CallbackServerContext;

  ServerUnaryReactor* GetServerInfo(Ctx* ctx, const ::dflash::eval::v1::GetServerInfoRequest* req,
                                    ::dflash::eval::v1::ServerInfo* resp) override;
  ServerUnaryReactor* ValidateCheckpoint(
      Ctx* ctx, const ::dflash::eval::v1::ValidateCheckpointRequest* req,
      ::dflash::eval::v1::ValidateCheckpointResponse* resp) override;
  ServerUnaryReactor* LoadDrafter(Ctx* ctx, const ::dflash::eval::v1::LoadDrafterRequest* req,
                                  ::dflash::eval::v1::LoadResponse* resp) override;
  ServerUnaryReactor* LoadTarget(Ctx* ctx, const ::dflash::eval::v1::LoadTargetRequest* req,
                                 ::dflash::eval::v1::LoadResponse* resp) override;
  ServerUnaryReactor* LoadDataset(Ctx* ctx, const ::dflash::eval::v1::LoadDatasetRequest* req,
                                  ::dflash::eval::v1::LoadResponse* resp) override;
  ServerUnaryReactor* UnloadDrafter(Ctx* ctx, const ::dflash::eval::v1::UnloadRequest* req,
                                    ::dflash::eval::v1::UnloadResponse* resp) override;
  ServerUnaryReactor* UnloadTarget(Ctx* ctx, const ::dflash::eval::v1::UnloadRequest* req,
                                   ::dflash::eval::v1::UnloadResponse* resp) override;
  ServerUnaryReactor* UnloadDataset(Ctx* ctx, const ::dflash::eval::v1::UnloadRequest* req,
                                    ::dflash::eval::v1::UnloadResponse* resp) override;
  ServerUnaryReactor* ListResources(Ctx* ctx, const ::dflash::eval::v1::ListResourcesRequest* req,
                                    ::dflash::eval::v1::ListResourcesResponse* resp) override;
  ServerUnaryReactor* RunEval(Ctx* ctx, const ::dflash::eval::v1::RunEvalRequest* req,
                              ::dflash::eval::v1::EvalResult* resp) override;

  // Jobs (core/job_service.h).
  ServerUnaryReactor* SubmitEval(Ctx* ctx, const ::dflash::eval::v1::SubmitEvalRequest* req,
                                 ::dflash::eval::v1::EvalJob* resp) override;
  ServerUnaryReactor* GetEval(Ctx* ctx, const ::dflash::eval::v1::GetEvalRequest* req,
                              ::dflash::eval::v1::EvalJob* resp) override;
  ServerUnaryReactor* ListEvals(Ctx* ctx, const ::dflash::eval::v1::ListEvalsRequest* req,
                                ::dflash::eval::v1::ListEvalsResponse* resp) override;
  grpc::ServerWriteReactor<::dflash::eval::v1::EvalJob>* WatchEval(
      Ctx* ctx, const ::dflash::eval::v1::WatchEvalRequest* req) override;
  ServerUnaryReactor* CancelEval(Ctx* ctx, const ::dflash::eval::v1::CancelEvalRequest* req,
                                 ::dflash::eval::v1::EvalJob* resp) override;
  ServerUnaryReactor* ResubmitEval(Ctx* ctx, const ::dflash::eval::v1::ResubmitEvalRequest* req,
                                   ::dflash::eval::v1::EvalJob* resp) override;
  ServerUnaryReactor* CompareEvals(Ctx* ctx, const ::dflash::eval::v1::CompareEvalsRequest* req,
                                   ::dflash::eval::v1::CompareEvalsResponse* resp) override;

 private:
  // Runs `work` (returning absl::Status) on the pool and finishes the call.
  template <typename Work>
  ServerUnaryReactor* Offload(Ctx* ctx, const char* method, Work work);
  ServerUnaryReactor* Unload(Ctx* ctx, const char* method, core::ResourceKind kind,
                             const ::dflash::eval::v1::UnloadRequest* req,
                             ::dflash::eval::v1::UnloadResponse* resp);

  // Offload for job RPCs: UNIMPLEMENTED without a job service.
  template <typename Work>
  ServerUnaryReactor* OffloadJob(Ctx* ctx, const char* method, Work work);

  // Ok, or why the caller may not call `method` (token_auth.h).
  absl::Status Authorize(const Ctx* ctx, const char* method) const;
  // Finishes a unary call refused before any work.
  ServerUnaryReactor* Refuse(Ctx* ctx, const char* method, const absl::Status& status);

  core::EvalCore& core_;
  core::JobService* jobs_;
  ServiceOptions options_;
  std::atomic<int> open_watch_streams_{0};
  WorkerPool pool_;
};

}  // namespace dflash::service
