#include "job_service_fixture.h"

#include <optional>
#include <utility>

#include "core/local_placement.h"
#include "jobs/local_backend.h"

namespace dflash::core {

absl::StatusOr<types::EvalResult> GatedCore::RunEval(const types::EvalParams& p,
                                                     const types::ProgressFn& progress) {
  std::unique_lock<std::mutex> lock(mu_);
  runs_.push_back(p);
  ++started_;
  cv_.notify_all();
  cv_.wait(lock, [&] { return !hold || released_; });
  lock.unlock();
  return FakeEvalCore::RunEval(p, progress);
}

absl::StatusOr<resident::ResourceInfo> GatedCore::Unload(resident::ResourceKind kind,
                                                         const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  unloads_.push_back(std::string(resident::ResourceKindName(kind)) + " " + name);
  return FakeEvalCore::Unload(kind, name);
}

void GatedCore::WaitStarted(int n) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return started_ >= n; });
}

void GatedCore::Release() {
  std::lock_guard<std::mutex> lock(mu_);
  released_ = true;
  cv_.notify_all();
}

std::vector<std::string> GatedCore::unloads() {
  std::lock_guard<std::mutex> lock(mu_);
  return unloads_;
}

std::vector<types::EvalParams> GatedCore::runs() {
  std::lock_guard<std::mutex> lock(mu_);
  return runs_;
}

resident::ResourceInfo Resident(resident::ResourceKind kind, const std::string& name,
                                const std::string& fp) {
  resident::ResourceInfo r;
  r.kind = kind;
  r.name = name;
  r.fingerprint = fp;
  r.device = "cpu";
  return r;
}

void JobServiceImplTest::SetUp() {
  core_.resources = {Resident(resident::ResourceKind::kTarget, "t", "h64:t"),
                     Resident(resident::ResourceKind::kDataset, "d", "h64:d"),
                     Resident(resident::ResourceKind::kDrafter, "m", "h64:m")};
  core_.eval_result.blocks = 7;
  core_.eval_result.mode = types::Mode::kReplay;
  core_.eval_result.accept_length_pooled = 2.5;
  auto s = store::SqliteResultStore::Open(dir_.Join("results.sqlite3"));
  ASSERT_TRUE(s.ok()) << s.status();
  store_ = *std::move(s);
}

void JobServiceImplTest::Start() {
  auto svc = JobServiceImpl::Create(core_, *store_, jobs::JobQueueOptions{},
                                    std::make_unique<jobs::LocalBackend>(*store_),
                                    std::make_unique<LocalPlacement>(core_, SuiteMap{}));
  ASSERT_TRUE(svc.ok()) << svc.status();
  service_ = *std::move(svc);
}

void JobServiceImplTest::TearDown() {
  core_.Release();
  service_.reset();
}

types::JobRequest JobServiceImplTest::Request(const std::string& drafter) {
  types::JobRequest r;
  r.params.drafter = drafter;
  r.params.dataset = "d";
  r.params.options.mode = types::Mode::kReplay;
  r.params.options.max_samples = 3;
  return r;
}

types::JobRecord JobServiceImplTest::WaitDone(const std::string& id) {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<types::JobRecord> last;
  auto w = service_->Watch(id, [&](const types::JobRecord& r) {
    std::lock_guard<std::mutex> lock(mu);
    if (types::IsTerminal(r.state)) last = r;
    cv.notify_all();
  });
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return types::JobRecord{};
  if (w->handle == 0) return w->current;
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return last.has_value(); });
  types::JobRecord done = *last;
  lock.unlock();
  service_->Unwatch(w->handle);
  return done;
}

void SetFourLikeSamples(types::EvalResult& r, int64_t accepted_total) {
  r.dataset_fingerprint = "h64:d";
  r.per_sample.clear();
  for (int64_t i = 0; i < 4; ++i) {
    types::SampleSummary s;
    s.sample_index = i;
    s.blocks = 2;
    s.accepted_total = accepted_total;
    s.counted = {2};
    s.correct = {1};
    s.accepted = {1};
    s.conditional_counted = {2};
    r.per_sample.push_back(s);
  }
}

}  // namespace dflash::core
