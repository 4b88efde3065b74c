// File: job_queue.cc
// The queue (job_queue.h); what it offers its backend is in job_queue_seam.cc.
#include "jobs/job_queue.h"

#include <optional>
#include <utility>

#include "common/ops_observer.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace dflash::jobs {
namespace {

using Clock = std::chrono::steady_clock;
using types::JobRecord;
using types::JobState;

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

absl::StatusOr<std::unique_ptr<JobQueue>> JobQueue::Create(store::ResultStore& store, Runner runner,
                                                           JobQueueOptions options,
                                                           std::unique_ptr<JobBackend> backend) {
  if (options.max_queued < 1 || options.concurrent_jobs < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_queued and concurrent_jobs must be >= 1; got ", options.max_queued,
                     " and ", options.concurrent_jobs));
  }
  if (backend == nullptr) return absl::InvalidArgumentError("a job queue needs a backend");
  RETURN_IF_ERROR(store.MarkInterruptedOnStartup(NowMicros()).status());
  RETURN_IF_ERROR(backend->Open());
  return std::unique_ptr<JobQueue>(
      new JobQueue(store, std::move(runner), std::move(options), std::move(backend)));
}

JobQueue::JobQueue(store::ResultStore& store, Runner runner, JobQueueOptions options,
                   std::unique_ptr<JobBackend> backend)
    : store_(store),
      runner_(std::move(runner)),
      options_(std::move(options)),
      backend_(std::move(backend)) {
  backend_->Attach(*this);
  for (int i = 0; i < options_.concurrent_jobs; ++i) {
    threads_.emplace_back([this] { backend_->RunLoop(); });
  }
}

JobQueue::~JobQueue() {
  Shutdown(std::chrono::milliseconds(0));
}

absl::StatusOr<types::JobRecord> JobQueue::Submit(types::JobRecord job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!accepting_) return absl::UnavailableError("the server is shutting down; no new jobs");
  ResetAsQueued(job);
  ASSIGN_OR_RETURN(const bool here, backend_->Record(job, static_cast<int>(queue_.size())));
  if (!here) return job;  // waits in the store: the backend woke its runners
  auto entry = std::make_shared<Job>();
  entry->record = job;
  active_[job.id] = entry;
  queue_.push_back(job.id);
  ReportStates();
  cv_.notify_all();
  return job;
}

absl::StatusOr<types::JobRecord> JobQueue::Get(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = active_.find(id);
    if (it != active_.end()) return it->second->record;
  }
  // A job leaves active_ only after its final record is stored.
  return store_.Get(id);
}

absl::StatusOr<types::JobRecord> JobQueue::AddCalibration(const std::string& id, std::string json) {
  // Serialised with other record writes of this server; a finished record
  // is written by no one else.
  std::lock_guard<std::mutex> lock(mu_);
  if (active_.count(id) > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id, " has not finished; calibrate a SUCCEEDED job"));
  }
  ASSIGN_OR_RETURN(types::JobRecord record, store_.Get(id));
  if (record.state != types::JobState::kSucceeded) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id, " is ", types::JobStateName(record.state), "; calibrate a SUCCEEDED job"));
  }
  record.calibrations.push_back(std::move(json));
  RETURN_IF_ERROR(store_.Put(record), "storing the calibration of job ", id);
  return record;
}

absl::StatusOr<types::JobPage> JobQueue::List(const types::ListQuery& query) {
  ASSIGN_OR_RETURN(types::JobPage page, store_.List(query));
  // Unfinished jobs: show live progress rather than the stored snapshot.
  std::lock_guard<std::mutex> lock(mu_);
  for (types::JobRecord& r : page.jobs) {
    auto it = active_.find(r.id);
    if (it != active_.end()) r = it->second->record;
  }
  return page;
}

absl::StatusOr<types::JobRecord> JobQueue::Cancel(const std::string& id,
                                                  std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = active_.find(id);
  if (it == active_.end()) {
    lock.unlock();
    return backend_->CancelElsewhere(id, wait);  // finished, or waiting or running elsewhere
  }
  std::shared_ptr<Job> job = it->second;
  if (job->record.state == types::JobState::kQueued) {
    types::JobRecord r = job->record;
    r.state = types::JobState::kCancelled;
    r.end_unix_micros = NowMicros();
    r.error_code = static_cast<int>(absl::StatusCode::kCancelled);
    r.error_message = "cancelled before it started";
    RETURN_IF_ERROR(store_.Put(r), "recording the cancellation of ", id);
    for (auto q = queue_.begin(); q != queue_.end(); ++q) {
      if (*q == id) {
        queue_.erase(q);
        break;
      }
    }
    job->record = r;
    active_.erase(it);
    Publish(r);
    cv_.notify_all();
    return r;
  }
  job->cancel_requested = true;
  cv_.wait_for(lock, wait, [&] { return active_.count(id) == 0; });
  return job->record;  // the final record once it ended, else RUNNING
}

absl::StatusOr<JobQueue::Watch> JobQueue::Subscribe(const std::string& id, WatchFn fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = active_.find(id);
    if (it != active_.end()) {
      Watch w;
      w.current = it->second->record;
      std::lock_guard<std::mutex> wlock(watch_mu_);
      w.handle = next_handle_++;
      watchers_[w.handle] = Watcher{id, std::move(fn)};
      return w;
    }
  }
  ASSIGN_OR_RETURN(types::JobRecord done, store_.Get(id));
  if (!types::IsTerminal(done.state) && backend_->WatchElsewhere(done)) {
    // Queued in the store or running on another server: the backend polls it.
    std::lock_guard<std::mutex> wlock(watch_mu_);
    const int64_t handle = next_handle_++;
    watchers_[handle] = Watcher{id, std::move(fn)};
    return Watch{std::move(done), handle};
  }
  return Watch{std::move(done), 0};
}

void JobQueue::Unsubscribe(int64_t handle) {
  std::lock_guard<std::mutex> wlock(watch_mu_);
  watchers_.erase(handle);
}

void JobQueue::ReportStates() const {
  Ops().OnJobStates({{"queued", static_cast<int64_t>(queue_.size())},
                     {"running", static_cast<int64_t>(running_)}});
}

void JobQueue::Publish(const types::JobRecord& record) {
  ReportStates();
  if (types::IsTerminal(record.state)) {
    const double ran = record.start_unix_micros > 0 && record.end_unix_micros > 0
                           ? (record.end_unix_micros - record.start_unix_micros) / 1e6
                           : 0.0;
    Ops().OnJobFinished(types::JobStateName(record.state), ran);
  }
  std::lock_guard<std::mutex> wlock(watch_mu_);
  DeliverLocked(record);
}

void JobQueue::DeliverLocked(const types::JobRecord& record) {
  for (const auto& [_, w] : watchers_) {
    if (w.id == record.id) w.fn(record);
  }
  // Final states end every subscription to the job.
  if (types::IsTerminal(record.state)) {
    for (auto it = watchers_.begin(); it != watchers_.end();) {
      it = it->second.id == record.id ? watchers_.erase(it) : std::next(it);
    }
  }
}

std::vector<std::string> JobQueue::UnfinishedJobsWhere(
    const std::function<bool(const types::JobRequest&)>& uses, const std::string& except_id) const {
  std::vector<std::string> ids;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, job] : active_) {
    if (id != except_id && uses(job->record.request)) ids.push_back(id);
  }
  return ids;
}

int JobQueue::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(queue_.size());
}

int JobQueue::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

void JobQueue::ResetAsQueued(types::JobRecord& job) const {
  job.create_unix_micros = NowMicros();
  job.state = types::JobState::kQueued;
  job.server_version = options_.server_version;
  job.progress = {};
  job.result.reset();
  job.start_unix_micros = job.end_unix_micros = 0;
  job.error_code = 0;
  job.error_message.clear();
  job.interrupted_by_restart = false;
  job.attempts.clear();
  job.server.clear();
}

void JobQueue::RunQueued() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = active_.at(queue_.front());
      queue_.pop_front();
      ++running_;
      job->record.state = types::JobState::kRunning;
      job->record.start_unix_micros = NowMicros();
      job->started = job->last_publish = Clock::now();
      Publish(job->record);
    }
    RunOne(job);
  }
}

bool JobQueue::OnProgress(Job& job, const types::EvalProgress& p) {
  std::lock_guard<std::mutex> lock(mu_);
  types::JobProgress& out = job.record.progress;
  const Clock::time_point now = Clock::now();
  out.blocks_done = p.blocks_done;
  out.blocks_total = p.blocks_total;
  out.samples_done = p.samples_done;
  out.samples_total = p.samples_total;
  out.blocks_total_is_bound = p.blocks_total_is_bound;
  out.elapsed_seconds = Seconds(now - job.started);
  out.eta_seconds = p.blocks_done > 0 ? out.elapsed_seconds *
                                            static_cast<double>(p.blocks_total - p.blocks_done) /
                                            static_cast<double>(p.blocks_done)
                                      : 0;
  if (!job.stop_with.empty() && !job.cancel_requested) {
    // A shard run inline by its parent job: cancelled with it.
    auto parent = active_.find(job.stop_with);
    if (parent != active_.end() && parent->second->cancel_requested) job.cancel_requested = true;
  }
  if (now - job.last_publish >= options_.progress_interval) {
    job.last_publish = now;
    Publish(job.record);
  }
  return !job.cancel_requested && !interrupt_ && !job.lease_lost;
}

void JobQueue::RunOne(const std::shared_ptr<Job>& job) {
  types::JobRecord record;
  {
    std::lock_guard<std::mutex> lock(mu_);
    record = job->record;
  }
  backend_->StoreStarted(record);
  absl::StatusOr<types::EvalResult> result =
      runner_(record, [this, job](const types::EvalProgress& p) { return OnProgress(*job, p); });
  record = Finish(*job, std::move(result));
  // Committed (and, for SUCCEEDED, synced) before anyone can see the state.
  absl::Status stored = backend_->StoreFinal(record, LeaseLost(*job));
  if (!stored.ok() && !absl::IsFailedPrecondition(stored)) {
    record.state = types::JobState::kFailed;
    record.result.reset();
    record.error_code = static_cast<int>(absl::StatusCode::kInternal);
    record.error_message = absl::StrCat("the result could not be stored: ", stored.message());
    backend_->StoreFinal(record, LeaseLost(*job)).IgnoreError();
  }
  std::lock_guard<std::mutex> lock(mu_);
  job->record = record;
  active_.erase(record.id);
  --running_;
  // A fleet job this server lost (or handed back) is followed from the store.
  if (!absl::IsFailedPrecondition(stored) && record.state != types::JobState::kQueued)
    Publish(record);
  ReportStates();
  cv_.notify_all();
}

types::JobRecord JobQueue::Finish(Job& job, absl::StatusOr<types::EvalResult> result) {
  std::lock_guard<std::mutex> lock(mu_);
  types::JobRecord record = job.record;  // with the latest progress
  record.end_unix_micros = NowMicros();
  record.progress.elapsed_seconds = Seconds(Clock::now() - job.started);
  record.progress.eta_seconds = 0;
  // A fleet job outlives this server (stopping), or another may hold what
  // this one cannot (refused here): handed back for another to run.
  const std::optional<std::string> hand_back =
      result.ok() ? std::nullopt : backend_->HandBack(result.status(), interrupt_);
  if (result.ok()) {
    record.state = types::JobState::kSucceeded;
    // Done is done: the last progress report may precede the last sample.
    record.progress.blocks_done = record.progress.blocks_total;
    record.progress.samples_done = record.progress.samples_total;
    if (!result->drafter_fingerprint.empty())
      record.drafter_fingerprint = result->drafter_fingerprint;
    if (!result->dataset_fingerprint.empty())
      record.dataset_fingerprint = result->dataset_fingerprint;
    record.device = result->device;
    record.dtype = result->dtype;
    record.result = *std::move(result);
  } else if (job.cancel_requested && absl::IsCancelled(result.status())) {
    record.state = types::JobState::kCancelled;
    record.error_code = static_cast<int>(absl::StatusCode::kCancelled);
    record.error_message = "cancelled while running";
  } else if (hand_back) {
    record.state = types::JobState::kQueued;  // the backend stores it as waiting
  } else if (interrupt_ && absl::IsCancelled(result.status())) {
    record.state = types::JobState::kInterrupted;
    record.interrupted_by_restart = true;
    record.error_message = "the server stopped while this job was RUNNING; resubmit it";
  } else {
    record.state = types::JobState::kFailed;
    record.error_code = static_cast<int>(result.status().code());
    record.error_message = std::string(result.status().message());
  }
  if (!record.attempts.empty()) {
    record.attempts.back().end_unix_micros = record.end_unix_micros;
    record.attempts.back().outcome =
        record.state != types::JobState::kQueued ? types::JobStateName(record.state) : *hand_back;
  }
  return record;
}

void JobQueue::Shutdown(std::chrono::milliseconds grace) {
  std::vector<std::thread> threads;
  {
    std::unique_lock<std::mutex> lock(mu_);
    accepting_ = false;
    for (const std::string& id : queue_) {
      auto it = active_.find(id);
      if (it == active_.end()) continue;
      types::JobRecord r = it->second->record;
      r.state = types::JobState::kInterrupted;
      r.interrupted_by_restart = true;
      r.end_unix_micros = NowMicros();
      r.error_message = "the server stopped before this job ran; resubmit it";
      // On failure the next start marks it INTERRUPTED from the store.
      store_.Put(r).IgnoreError();
      it->second->record = r;
      active_.erase(it);
      Publish(r);
    }
    queue_.clear();
    cv_.wait_for(lock, grace, [this] { return running_ == 0; });
    interrupt_ = true;
    stopping_ = true;
    threads.swap(threads_);
    cv_.notify_all();
  }
  backend_->WakeRunners();
  for (std::thread& t : threads) t.join();
  backend_->Close();
}

}  // namespace dflash::jobs
