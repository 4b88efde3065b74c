#include "service/watch_reactor.h"

#include <spdlog/spdlog.h>

#include "service/proto_convert.h"
#include "service/request_parser.h"
#include "service/status_convert.h"

namespace dflash::service {

WatchReactor::WatchReactor(core::JobService* jobs, grpc::CallbackServerContext* ctx,
                           const std::string& id, const absl::Status& refused,
                           std::atomic<int>* open_streams)
    : jobs_(jobs),
      ctx_(ctx),
      id_(id),
      start_(std::chrono::steady_clock::now()),
      open_streams_(open_streams) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!refused.ok()) {
    FinishLocked(ToGrpcStatus(refused));
    return;
  }
  if (jobs_ == nullptr) {
    FinishLocked(
        ToGrpcStatus(absl::UnimplementedError("this server was started without a job service")));
    return;
  }
  // OnChange may run (on a runner thread) before Watch returns; until
  // started_ it only keeps the newest change.
  lock.unlock();
  auto start = jobs_->Watch(id, [this](const types::JobRecord& r) { OnChange(r); });
  lock.lock();
  if (!start.ok()) {
    FinishLocked(ToGrpcStatus(start.status()));
    return;
  }
  handle_ = start->handle;
  // A change that arrived meanwhile is newer than the snapshot: keep it.
  if (!pending_) pending_ = std::move(start->current);
  started_ = true;
  WriteNextLocked();
}

void WatchReactor::OnChange(const types::JobRecord& record) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  pending_ = record;
  if (started_) WriteNextLocked();
}

void WatchReactor::WriteNextLocked() {
  if (writing_ || finished_ || wrote_final_ || !pending_) return;
  ::dflash::eval::v1::EvalJob job;
  ToProto(*pending_, &job);
  message_ = ToByteBuffer(job);
  wrote_final_ = types::IsTerminal(pending_->state);
  pending_.reset();
  writing_ = true;
  ++writes_;
  StartWrite(&message_);
}

void WatchReactor::OnWriteDone(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  writing_ = false;
  if (!ok) {
    FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
  } else if (wrote_final_) {
    FinishLocked(grpc::Status::OK);
  } else {
    WriteNextLocked();
  }
}

void WatchReactor::OnCancel() {
  // Unwatch outside mu_: a change being delivered holds the queue's lock and
  // waits for mu_.
  if (jobs_ && handle_) jobs_->Unwatch(handle_);
  std::lock_guard<std::mutex> lock(mu_);
  FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
}

void WatchReactor::FinishLocked(const grpc::Status& status) {
  if (finished_) return;
  finished_ = true;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  spdlog::info("rpc WatchEval peer={} id={} status={} messages={} duration_ms={:.1f}", ctx_->peer(),
               id_, static_cast<int>(status.error_code()), writes_, ms);
  Finish(status);
}

void WatchReactor::OnDone() {
  // After Unwatch returns no change can reach this object again.
  if (jobs_ && handle_) jobs_->Unwatch(handle_);
  if (open_streams_) open_streams_->fetch_sub(1);
  delete this;
}

}  // namespace dflash::service
