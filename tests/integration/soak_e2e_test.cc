// A bounded concurrency soak against the real dflash-evald on loopback:
// several client threads mix loads, unloads, evaluations, cancels and
// listings for a fixed time. Every reply must be OK or a status documented
// for that call; one thread cycles its own drafter and dataset through
// load, queued evaluation and unload, so unloads under load are exercised
// every cycle; afterwards the server still answers, every job ends, and
// once the soak's objects are unloaded the resident bytes are back to the
// baseline (only t, d and m resident).
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/eval_client.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
namespace pb = ::dflash::eval::v1;
using Clock = std::chrono::steady_clock;
using client::EvalClient;

constexpr int kThreads = 5;
constexpr auto kSoakTime = std::chrono::seconds(15);
constexpr int kMaxOpsPerThread = 5000;  // bounds the soak on a fast machine
constexpr int kDrafterCopies = 3;
constexpr int kDatasetCopies = 2;
constexpr auto kCallTimeout = std::chrono::seconds(60);

using Codes = std::set<absl::StatusCode>;

// Replies seen, per call and code; unexpected codes are failures.
class Tally {
 public:
  void Record(const std::string& call, const absl::Status& status, const Codes& allowed) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[absl::StatusCodeToString(status.code())];
    ++per_call_[absl::StrCat(call, " ", absl::StatusCodeToString(status.code()))];
    if (!status.ok() && allowed.count(status.code()) == 0) {
      bad_.push_back(absl::StrCat(call, ": ", status.ToString()));
    }
  }
  std::string Report() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out = "replies per code:";
    for (const auto& [code, n] : counts_) absl::StrAppend(&out, " ", code, "=", n);
    absl::StrAppend(&out, "\nreplies per call:");
    for (const auto& [key, n] : per_call_) absl::StrAppend(&out, "\n  ", key, " = ", n);
    return out;
  }
  int64_t Count(const std::string& call_and_code) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = per_call_.find(call_and_code);
    return it == per_call_.end() ? 0 : it->second;
  }
  std::vector<std::string> bad() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bad_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> counts_;
  std::map<std::string, int64_t> per_call_;
  std::vector<std::string> bad_;
};

// Job ids any thread submitted, for GetEval / CancelEval from the others.
class JobIds {
 public:
  void Add(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    ids_.push_back(id);
  }
  std::string Pick(std::mt19937& rng) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (ids_.empty()) return "";
    return ids_[std::uniform_int_distribution<size_t>(0, ids_.size() - 1)(rng)];
  }
  std::vector<std::string> All() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ids_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> ids_;
};

int64_t ResidentBytes(const pb::ListResourcesResponse& list) {
  int64_t total = 0;
  for (const pb::Resource& r : list.resources()) total += r.bytes();
  return total;
}

int64_t DeviceBytes(const pb::ServerInfo& info) {
  int64_t total = 0;
  for (const pb::DeviceInfo& d : info.devices()) total += d.used_memory_bytes();
  return total;
}

std::vector<std::string> ResidentNames(const pb::ListResourcesResponse& list) {
  std::vector<std::string> names;
  for (const pb::Resource& r : list.resources()) {
    names.push_back(absl::StrCat(r.kind() == pb::RESOURCE_KIND_TARGET    ? "target:"
                                 : r.kind() == pb::RESOURCE_KIND_DRAFTER ? "drafter:"
                                                                         : "dataset:",
                                 r.name()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The codes each call may answer besides OK.
const Codes kNone = {};
// Names may vanish (another thread unloaded them) or be held by an evaluation.
const Codes kUnload = {absl::StatusCode::kNotFound, absl::StatusCode::kFailedPrecondition};
const Codes kLoad = {absl::StatusCode::kAlreadyExists, absl::StatusCode::kResourceExhausted};
const Codes kEval = {absl::StatusCode::kNotFound, absl::StatusCode::kFailedPrecondition,
                     absl::StatusCode::kResourceExhausted};

// What the soak's threads share.
struct Soak {
  std::string address;
  std::string data;
  Clock::time_point deadline;
  Tally tally;
  JobIds jobs;
  std::atomic<int64_t> ops{0};
};

// One client thread of the soak: thread 0 cycles its own objects, the
// others mix calls at random.
class SoakWorker {
 public:
  SoakWorker(Soak& soak, int index)
      : soak_(soak),
        index_(index),
        c_(soak.address, std::chrono::duration_cast<std::chrono::milliseconds>(kCallTimeout)),
        rng_(1234 + index) {}

  void Run() {
    if (index_ == 0) {
      for (int i = 0; i < kMaxOpsPerThread && Clock::now() < soak_.deadline; ++i) Cycle();
      return;
    }
    for (int i = 0; i < kMaxOpsPerThread && Clock::now() < soak_.deadline; ++i) {
      ++soak_.ops;
      Call(Pick(12));
    }
  }

 private:
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  std::string DrafterName() {
    int k = Pick(kDrafterCopies + 1);
    return k == kDrafterCopies ? std::string("m") : absl::StrCat("soak-m", k);
  }
  std::string DatasetName() {
    int k = Pick(kDatasetCopies + 1);
    return k == kDatasetCopies ? std::string("d") : absl::StrCat("soak-d", k);
  }
  void FillEvalRequest(pb::EvalRequest* r) {
    r->set_drafter(DrafterName());
    r->set_dataset(DatasetName());
    r->set_mode(Pick(2) == 0 ? pb::EVAL_MODE_ANCHOR : pb::EVAL_MODE_REPLAY);
    r->set_max_samples(2);
    r->set_max_blocks(2);
    r->set_run("soak");
  }

  // One cycle of the cycler: its own drafter and dataset copies, which no
  // other thread names, loaded, evaluated through the queue, unloaded while
  // the job may still hold them (refused or not, by timing), then unloaded
  // once the job ended, which must succeed. The random mix rarely frees its
  // shared copies (queued jobs hold them); this makes unloads under load
  // happen every cycle.
  void Cycle() {
    Tally& tally = soak_.tally;
    soak_.ops += 6;
    pb::LoadDrafterRequest ld;
    ld.set_name("cycle-m");
    ld.set_path(soak_.data + "/soak-cycle");
    tally.Record("cycle LoadDrafter", c_.LoadDrafter(ld).status(), kNone);
    pb::LoadDatasetRequest lds;
    lds.set_name("cycle-d");
    lds.set_path(soak_.data + "/soak-dataset-cycle");
    tally.Record("cycle LoadDataset", c_.LoadDataset(lds).status(), kNone);
    pb::SubmitEvalRequest r;
    FillEvalRequest(r.mutable_request());
    r.mutable_request()->set_drafter("cycle-m");
    r.mutable_request()->set_dataset("cycle-d");
    auto job = c_.SubmitEval(r);
    // The queue may be full of the others' jobs.
    tally.Record("cycle SubmitEval", job.status(), {absl::StatusCode::kResourceExhausted});
    const Codes kHeld = {absl::StatusCode::kFailedPrecondition};
    tally.Record("cycle UnloadDrafter while queued",
                 c_.Unload(pb::RESOURCE_KIND_DRAFTER, "cycle-m").status(), kHeld);
    if (job.ok()) {
      soak_.jobs.Add(job->id());
      absl::StatusOr<pb::EvalJob> done = c_.WatchEval(job->id(), nullptr);
      tally.Record("cycle wait", done.status(), kNone);
    }
    // Its job has ended: nothing holds them now.
    tally.Record("cycle UnloadDrafter", c_.Unload(pb::RESOURCE_KIND_DRAFTER, "cycle-m").status(),
                 {absl::StatusCode::kNotFound});  // already unloaded above
    tally.Record("cycle UnloadDataset", c_.Unload(pb::RESOURCE_KIND_DATASET, "cycle-d").status(),
                 kNone);
  }

  // One call of the random mix, `which` of 12.
  void Call(int which) {
    Tally& tally = soak_.tally;
    switch (which) {
      case 0: {
        int k = Pick(kDrafterCopies);
        pb::LoadDrafterRequest r;
        r.set_name(absl::StrCat("soak-m", k));
        r.set_path(absl::StrCat(soak_.data, "/soak-", k));
        tally.Record("LoadDrafter", c_.LoadDrafter(r).status(), kLoad);
        break;
      }
      case 1:
        tally.Record(
            "UnloadDrafter",
            c_.Unload(pb::RESOURCE_KIND_DRAFTER, absl::StrCat("soak-m", Pick(kDrafterCopies)))
                .status(),
            kUnload);
        break;
      case 2: {
        int k = Pick(kDatasetCopies);
        pb::LoadDatasetRequest r;
        r.set_name(absl::StrCat("soak-d", k));
        r.set_path(absl::StrCat(soak_.data, "/soak-dataset-", k));
        tally.Record("LoadDataset", c_.LoadDataset(r).status(), kLoad);
        break;
      }
      case 3:
        tally.Record(
            "UnloadDataset",
            c_.Unload(pb::RESOURCE_KIND_DATASET, absl::StrCat("soak-d", Pick(kDatasetCopies)))
                .status(),
            kUnload);
        break;
      case 4:
      case 5: {
        pb::SubmitEvalRequest r;
        FillEvalRequest(r.mutable_request());
        auto job = c_.SubmitEval(r);
        tally.Record("SubmitEval", job.status(), kEval);
        if (job.ok()) soak_.jobs.Add(job->id());
        break;
      }
      default: CallReadOrCancel(which);
    }
  }

  // The calls of the mix that read, cancel or evaluate at once (6 to 11).
  void CallReadOrCancel(int which) {
    Tally& tally = soak_.tally;
    switch (which) {
      case 6: {
        std::string id = soak_.jobs.Pick(rng_);
        if (id.empty()) break;
        tally.Record("GetEval", c_.GetEval(id).status(), kNone);
        break;
      }
      case 7: {
        pb::ListEvalsRequest r;
        r.set_page_size(20);
        tally.Record("ListEvals", c_.ListEvals(r).status(), kNone);
        break;
      }
      case 8: {
        std::string id = soak_.jobs.Pick(rng_);
        if (id.empty()) break;
        // Cancelling a job that already ended is refused.
        tally.Record("CancelEval", c_.CancelEval(id).status(),
                     {absl::StatusCode::kFailedPrecondition});
        break;
      }
      case 9: {
        pb::RunEvalRequest r;
        FillEvalRequest(r.mutable_request());
        tally.Record("RunEval", c_.RunEval(r).status(), kEval);
        break;
      }
      case 10: tally.Record("ListResources", c_.ListResources({}).status(), kNone); break;
      case 11:
        tally.Record("GetServerInfo", c_.GetServerInfo().status(), kNone);
        tally.Record("Health", c_.Health(), kNone);
        break;
    }
  }

  Soak& soak_;
  const int index_;
  EvalClient c_;
  std::mt19937 rng_;
};

// The server's resident objects and bytes before the soak.
struct Baseline {
  std::vector<std::string> names;
  int64_t bytes = 0;
  int64_t device_bytes = 0;
};

class SoakE2eTest : public testing::TinyServerTest {
 protected:
  // Copies of the drafter and dataset for the mix to load, and one of each
  // for the cycler.
  static void CopySoakObjects(const std::string& data) {
    for (int k = 0; k < kDrafterCopies; ++k) {
      fs::copy(data + "/drafter", absl::StrCat(data, "/soak-", k), fs::copy_options::recursive);
    }
    for (int k = 0; k < kDatasetCopies; ++k) {
      fs::copy(data + "/dataset", absl::StrCat(data, "/soak-dataset-", k),
               fs::copy_options::recursive);
    }
    fs::copy(data + "/drafter", data + "/soak-cycle", fs::copy_options::recursive);
    fs::copy(data + "/dataset", data + "/soak-dataset-cycle", fs::copy_options::recursive);
  }

  static void TakeBaseline(EvalClient& admin, Baseline* base) {
    auto base_list = admin.ListResources({});
    ASSERT_TRUE(base_list.ok()) << base_list.status();
    auto base_info = admin.GetServerInfo();
    ASSERT_TRUE(base_info.ok()) << base_info.status();
    base->names = ResidentNames(*base_list);
    ASSERT_EQ(base->names, (std::vector<std::string>{"dataset:d", "drafter:m", "target:t"}));
    base->bytes = ResidentBytes(*base_list);
    base->device_bytes = DeviceBytes(*base_info);
    ASSERT_GT(base->bytes, 0);
  }

  // The cycler freed its objects under load, every cycle; every reply was
  // documented.
  static void ExpectCyclesAndNoBadReplies(const Tally& tally) {
    EXPECT_GT(tally.Count("cycle UnloadDataset OK"), 0) << tally.Report();
    EXPECT_EQ(tally.Count("cycle UnloadDataset OK"), tally.Count("cycle LoadDataset OK"));
    EXPECT_EQ(
        tally.Count("cycle UnloadDrafter while queued OK") + tally.Count("cycle UnloadDrafter OK"),
        tally.Count("cycle LoadDrafter OK"));
    const std::vector<std::string> bad = tally.bad();
    EXPECT_TRUE(bad.empty()) << bad.size() << " undocumented replies, first ones:\n"
                             << absl::StrJoin(bad.begin(),
                                              bad.begin() + std::min<size_t>(bad.size(), 10), "\n");
  }

  // Every job reaches a final state.
  static void ExpectJobsFinal(EvalClient& admin, const JobIds& jobs) {
    const Clock::time_point jobs_deadline = Clock::now() + std::chrono::seconds(30);
    std::vector<std::string> pending = jobs.All();
    std::map<std::string, int> final_states;
    while (!pending.empty() && Clock::now() < jobs_deadline) {
      std::vector<std::string> still;
      for (const std::string& id : pending) {
        auto job = admin.GetEval(id);
        ASSERT_TRUE(job.ok()) << id << ": " << job.status();
        if (client::IsFinalState(job->state())) {
          ++final_states[pb::JobState_Name(job->state())];
        } else {
          still.push_back(id);
        }
      }
      pending.swap(still);
      if (!pending.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    EXPECT_TRUE(pending.empty()) << pending.size() << " jobs not final after 30 s, e.g. "
                                 << pending.front();
    std::cout << "final job states:";
    for (const auto& [state, n] : final_states) std::cout << " " << state << "=" << n;
    std::cout << "\n";
  }

  // Unload every soak object; back to the baseline.
  static void ExpectBackToBaseline(EvalClient& admin, const Baseline& base) {
    auto unload_all = [&](pb::ResourceKind kind, const std::string& prefix, int copies) {
      for (int k = 0; k < copies; ++k) {
        absl::Status s = admin.Unload(kind, absl::StrCat(prefix, k)).status();
        EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kNotFound) << s;
      }
    };
    unload_all(pb::RESOURCE_KIND_DRAFTER, "soak-m", kDrafterCopies);
    unload_all(pb::RESOURCE_KIND_DATASET, "soak-d", kDatasetCopies);

    auto after_list = admin.ListResources({});
    ASSERT_TRUE(after_list.ok()) << after_list.status();
    auto after_info = admin.GetServerInfo();
    ASSERT_TRUE(after_info.ok()) << after_info.status();
    EXPECT_EQ(ResidentNames(*after_list), base.names);
    EXPECT_EQ(ResidentBytes(*after_list), base.bytes);
    EXPECT_EQ(DeviceBytes(*after_info), base.device_bytes);
    EXPECT_EQ(after_info->resident_targets(), 1);
    EXPECT_EQ(after_info->resident_drafters(), 1);
    EXPECT_EQ(after_info->resident_datasets(), 1);
    EXPECT_EQ(after_info->queued_jobs() + after_info->running_jobs(), 0);
  }
};

TEST_F(SoakE2eTest, MixedClientsKeepTheServerConsistent) {
  const std::string address = server_->address();
  // Loopback only: the soak never reaches beyond this machine.
  ASSERT_TRUE(absl::StartsWith(address, "127.0.0.1:")) << address;
  CopySoakObjects(data_);

  EvalClient admin(address, std::chrono::duration_cast<std::chrono::milliseconds>(kCallTimeout));
  Baseline base;
  ASSERT_NO_FATAL_FAILURE(TakeBaseline(admin, &base));

  Soak soak;
  soak.address = address;
  soak.data = data_;
  const Clock::time_point start = Clock::now();
  soak.deadline = start + kSoakTime;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&soak, i] { SoakWorker(soak, i).Run(); });
  }
  for (std::thread& t : threads) t.join();
  const double soak_seconds = std::chrono::duration<double>(Clock::now() - start).count();

  std::cout << "soak: " << kThreads << " threads, " << soak.ops.load() << " operations, "
            << soak.jobs.All().size() << " jobs submitted, " << soak_seconds << " s\n"
            << soak.tally.Report() << "\n";
  ExpectCyclesAndNoBadReplies(soak.tally);

  // The server still answers.
  EXPECT_TRUE(admin.Health().ok());
  ASSERT_TRUE(admin.GetServerInfo().ok());
  ASSERT_NO_FATAL_FAILURE(ExpectJobsFinal(admin, soak.jobs));
  ASSERT_NO_FATAL_FAILURE(ExpectBackToBaseline(admin, base));

  // The same process served it all.
  EXPECT_EQ(::kill(server_->pid(), 0), 0) << "server process " << server_->pid() << " is gone";
  EXPECT_TRUE(admin.Health().ok());
  EXPECT_FALSE(absl::StrContains(server_->log(), "terminate called")) << server_->log();
}

}  // namespace
}  // namespace dflash
