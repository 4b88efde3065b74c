// File: watch_reactor.h
// WatchEval's server stream: the job as it is now, then its changes (the
// queue sends progress at most every 200 ms; while a write is in flight only
// the newest change is kept), ending with the final state and OK. A client
// that goes away ends the stream and the subscription.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>

#include <grpcpp/grpcpp.h>

#include "core/job_service.h"
#include "dflash/eval/v1/service.grpc.pb.h"

namespace dflash::service {

// Writes serialized EvalJob messages: WatchEval is a raw callback method
// (eval_service.h).
class WatchReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  // `jobs` null: finishes UNIMPLEMENTED. `refused` not ok: finishes with it
  // at once (authentication, a bad or empty id, stream limit). `open_streams`, when given, is
  // decremented when the stream is done (the caller counted it in).
  WatchReactor(core::JobService* jobs, grpc::CallbackServerContext* ctx, const std::string& id,
               const absl::Status& refused = absl::OkStatus(),
               std::atomic<int>* open_streams = nullptr);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  void OnChange(const types::JobRecord& record);
  void WriteNextLocked();  // under mu_
  void FinishLocked(const grpc::Status& status);

  core::JobService* jobs_;
  grpc::CallbackServerContext* ctx_;
  std::string id_;
  std::chrono::steady_clock::time_point start_;
  int64_t handle_ = 0;
  std::atomic<int>* open_streams_;

  std::mutex mu_;
  std::optional<types::JobRecord> pending_;  // newest change not yet written
  grpc::ByteBuffer message_;                 // the write in flight (an EvalJob)
  bool started_ = false;
  bool writing_ = false;
  bool wrote_final_ = false;
  bool finished_ = false;
  int writes_ = 0;
};

}  // namespace dflash::service
