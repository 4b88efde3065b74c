// File: fake_job_service.h
// A JobService whose answers the test sets, and which records what it was
// asked: service tests check the proto <-> job translation, the status
// mapping and the WatchEval stream without a queue, a store or a core.
//
// The service calls it on gRPC and worker threads, so everything goes through
// one mutex: the test sets answers with Answer() and reads what was asked with
// calls(). A Watch keeps its WatchFn; the test pushes later job states with
// Push(), from its own thread, as the real queue would (under the fake's lock,
// so an Unwatch that returned means no change reaches the watcher again).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/job_service.h"
#include "resident/resource.h"

namespace dflash::testing {

class FakeJobService : public core::JobService {
 public:
  // What the fake answers.
  struct Answers {
    absl::Status error = absl::OkStatus();  // when set, every fallible call returns it
    types::JobRecord record;                // Submit, Resubmit, Get, Cancel; Watch's current state
    types::JobPage page;                    // List
    core::Comparison comparison;            // Compare
    ProfileExport profile;                  // ExportProfile
    CalibrationResult calibration;          // Calibrate
    resident::ResourceInfo unloaded;        // Unload, with the kind and name it was asked for
    absl::StatusOr<std::vector<core::FleetMember>> fleet =
        absl::UnimplementedError("a single-host store has no fleet");
    bool store_reachable = true;
    int queued = 0, running = 0;
  };

  // What it was asked, oldest first.
  struct Calls {
    std::vector<types::JobRequest> submitted;
    std::vector<std::string> resubmitted, got, cancelled, watched;
    std::vector<types::ListQuery> listed;
    std::vector<std::pair<std::vector<std::string>, core::CompareOptions>> compared;
    struct Export {
      std::string id, format;
      int setting = 0;
    };
    std::vector<Export> exported;
    struct Calibration {
      std::string id;
      std::vector<std::pair<std::string, std::string>> files;
      int setting = 0;
    };
    std::vector<Calibration> calibrated;
    std::vector<std::pair<resident::ResourceKind, std::string>> unloaded;
    std::vector<int64_t> unwatched;  // every Unwatch, also a second one for a handle
    std::vector<std::chrono::milliseconds> shutdowns;
  };

  // Changes the answers (under the fake's lock).
  void Answer(const std::function<void(Answers&)>& edit) {
    std::lock_guard<std::mutex> lock(mu_);
    edit(answers_);
  }
  Calls calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

  // Hands `record` to the watcher `handle` (Watch's WatchStart::handle), as
  // the queue would; false when there is no such watcher (never started, or
  // Unwatch was called).
  bool Push(int64_t handle, const types::JobRecord& record) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = watchers_.find(handle);
    if (it == watchers_.end()) return false;
    it->second(record);
    return true;
  }
  // Waits until `n` watches have started (their handles, oldest first; fewer
  // when `timeout` passed first). A watch of a finished job has handle 0.
  std::vector<int64_t> WaitForWatches(size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return handles_.size() >= n; });
    return handles_;
  }
  // Waits until Unwatch(handle) was called; false when `timeout` passed first.
  bool WaitForUnwatch(int64_t handle, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      for (int64_t h : calls_.unwatched) {
        if (h == handle) return true;
      }
      return false;
    });
  }

  absl::StatusOr<types::JobRecord> Submit(types::JobRequest request) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.submitted.push_back(std::move(request));
    if (!answers_.error.ok()) return answers_.error;
    return answers_.record;
  }
  absl::StatusOr<types::JobRecord> Resubmit(const std::string& id) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.resubmitted.push_back(id);
    if (!answers_.error.ok()) return answers_.error;
    return answers_.record;
  }
  absl::StatusOr<types::JobRecord> Get(const std::string& id) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.got.push_back(id);
    if (!answers_.error.ok()) return answers_.error;
    return answers_.record;
  }
  absl::StatusOr<types::JobPage> List(const types::ListQuery& query) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.listed.push_back(query);
    if (!answers_.error.ok()) return answers_.error;
    return answers_.page;
  }
  absl::StatusOr<types::JobRecord> Cancel(const std::string& id) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.cancelled.push_back(id);
    if (!answers_.error.ok()) return answers_.error;
    return answers_.record;
  }
  absl::StatusOr<core::Comparison> Compare(const std::vector<std::string>& ids,
                                           const core::CompareOptions& options) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.compared.emplace_back(ids, options);
    if (!answers_.error.ok()) return answers_.error;
    return answers_.comparison;
  }

  // answers.record is the current state; a finished one gets handle 0 and
  // its `fn` is dropped, as the real service does.
  absl::StatusOr<core::WatchStart> Watch(const std::string& id, jobs::WatchFn fn) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.watched.push_back(id);
    if (!answers_.error.ok()) return answers_.error;
    core::WatchStart start;
    start.current = answers_.record;
    if (!types::IsTerminal(start.current.state)) {
      start.handle = next_handle_++;
      watchers_[start.handle] = std::move(fn);
    }
    handles_.push_back(start.handle);
    cv_.notify_all();
    return start;
  }
  void Unwatch(int64_t handle) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.unwatched.push_back(handle);
    watchers_.erase(handle);
    cv_.notify_all();
  }

  absl::StatusOr<ProfileExport> ExportProfile(const std::string& id, const std::string& format,
                                              int setting) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.exported.push_back({id, format, setting});
    if (!answers_.error.ok()) return answers_.error;
    return answers_.profile;
  }
  absl::StatusOr<CalibrationResult> Calibrate(
      const std::string& id, const std::vector<std::pair<std::string, std::string>>& files,
      int setting) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.calibrated.push_back({id, files, setting});
    if (!answers_.error.ok()) return answers_.error;
    return answers_.calibration;
  }
  absl::StatusOr<resident::ResourceInfo> Unload(resident::ResourceKind kind,
                                                const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.unloaded.emplace_back(kind, name);
    if (!answers_.error.ok()) return answers_.error;
    resident::ResourceInfo r = answers_.unloaded;
    r.kind = kind;
    r.name = name;
    return r;
  }
  absl::StatusOr<std::vector<core::FleetMember>> Fleet() override {
    std::lock_guard<std::mutex> lock(mu_);
    return answers_.fleet;
  }
  bool store_reachable() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return answers_.store_reachable;
  }
  int queued() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return answers_.queued;
  }
  int running() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return answers_.running;
  }
  void Shutdown(std::chrono::milliseconds grace) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.shutdowns.push_back(grace);
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Answers answers_;
  Calls calls_;
  std::map<int64_t, jobs::WatchFn> watchers_;
  std::vector<int64_t> handles_;  // every Watch's, oldest first
  int64_t next_handle_ = 1;
};

}  // namespace dflash::testing
