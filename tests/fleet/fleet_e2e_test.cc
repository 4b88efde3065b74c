// A fleet: real dflash-evald servers on one real PostgreSQL database
// (test_util/postgres_server.h) over the tiny generated fixture. 60 jobs
// submitted round-robin to three servers each succeed exactly once with the
// numbers of a single SQLite server; kill -9 of the server running a job ->
// another server runs it again (attempt 2) and it succeeds; cancel and watch
// through a server that is not running the job; the schema is created in an
// empty database and a newer one is refused. Timings (per-job overhead of
// PostgreSQL vs SQLite, death-to-restart) are printed as "[measure]" lines.
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dflash/eval/v1/service.grpc.pb.h"
#include "fleet/fleet_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/postgres_server.h"
#include "test_util/process.h"
#include "test_util/temp_dir.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
namespace pb = ::dflash::eval::v1;
using ::dflash::testing::BinaryFromEnv;
using ::dflash::testing::CommandResult;
using ::dflash::testing::PostgresServer;
using ::dflash::testing::RunCommand;
using ::dflash::testing::Seconds;
using ::dflash::testing::ServerProcess;
using ::dflash::testing::WithoutTimings;
using ::testing::HasSubstr;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kBigSamples = 900;  // the tiny dataset 150 times over: seconds of work

using Client = testing::FleetClient;

// Job kind k of six: the fleet's drafter by checkpoint path, so any server
// can run it; the dataset by the name every server loads.
pb::EvalRequest Request(const std::string& data, int k, const std::string& dataset = "d") {
  pb::EvalRequest r;
  r.set_checkpoint_path(data + "/drafter");
  r.set_dataset(dataset);
  r.set_anchors(pb::ANCHOR_STRATEGY_ALL);
  r.set_max_samples(k == 0 ? 0 : k);
  r.set_run("fleet");
  r.set_step(k);
  return r;
}

class FleetE2eTest : public testing::FleetTestBase {
 protected:
  static void SetUpTestSuite() {
    SetUpFleet();
    ASSERT_FALSE(::testing::Test::HasFailure());
    fs::create_directories(data_ + "/big/rows");
    fs::copy_file(data_ + "/dataset/dataset.json", data_ + "/big/dataset.json");
    std::vector<std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(data_ + "/dataset")) {
      if (e.path().extension() == ".ckpt") files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    ASSERT_FALSE(files.empty());
    for (int k = 0; k < kBigSamples; ++k) {
      fs::create_hard_link(files[k % files.size()],
                           absl::StrCat(data_, "/big/rows/data_", k, ".ckpt"));
    }
  }
  static void TearDownTestSuite() { TearDownFleet(); }

  // A fleet server named `name` on `url`, with t, d and big loaded. Every
  // server here runs with a 2 s lease, whatever `lease_seconds` says, as
  // these tests always have. `load` false: nothing resident; `extra`: more
  // server flags.
  std::unique_ptr<ServerProcess> StartServer(const std::string& url, const std::string& name,
                                             const std::string& lease_seconds = "10",
                                             bool load = true,
                                             std::vector<std::string> extra = {}) {
    (void)lease_seconds;
    auto server = StartFleetServer(url, name, "2", extra);
    if (server != nullptr && load) Load(server->address());
    return server;
  }

  static void Load(const std::string& address) {
    for (auto [what, name, path] :
         {std::tuple<std::string, std::string, std::string>{"load-target", "t", "/target"},
          {"load-dataset", "d", "/dataset"},
          {"load-dataset", "big", "/big"}}) {
      CommandResult r = testing::RunCli(address, {what, data_ + path, "--name", name});
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    }
  }

  // Submits the 60 jobs (kind i % 6) round-robin to `servers`, waits for
  // all; returns the finished jobs and prints the wall time.
  std::vector<pb::EvalJob> Run60(const std::vector<ServerProcess*>& servers, const char* label) {
    std::vector<std::unique_ptr<Client>> clients;
    for (ServerProcess* s : servers) clients.push_back(std::make_unique<Client>(s->address()));
    const Clock::time_point t0 = Clock::now();
    std::vector<std::string> ids;
    for (int i = 0; i < 60; ++i) {
      ids.push_back(clients[i % clients.size()]->Submit(Request(data_, i % 6)).id());
    }
    std::vector<pb::EvalJob> done;
    for (size_t i = 0; i < ids.size(); ++i) {
      done.push_back(clients[(i + 1) % clients.size()]->WaitDone(ids[i], 300));
    }
    std::cout << "[measure] " << label << ": 60 jobs in " << Seconds(Clock::now() - t0)
              << " s wall (" << 1000 * Seconds(Clock::now() - t0) / 60 << " ms per job)\n";
    return done;
  }
};

TEST_F(FleetE2eTest, SixtyJobsOnThreeServersEachSucceedOnceWithSingleServerNumbers) {
  // The single-host reference: one SQLite server runs the same 60 jobs.
  std::vector<pb::EvalResult> want(6);
  {
    auto single = ServerProcess::Start(dir_->Join("state-single"), {"--data-root", data_});
    ASSERT_TRUE(single.ok()) << single.status();
    Load((*single)->address());
    std::vector<pb::EvalJob> jobs = Run60({single->get()}, "one server, SQLite");
    for (int k = 0; k < 6; ++k) {
      ASSERT_EQ(jobs[k].state(), pb::JOB_STATE_SUCCEEDED) << jobs[k].DebugString();
      want[k] = WithoutTimings(jobs[k].result());
    }
  }
  const std::string url = NewDatabase();
  {
    auto one = StartServer(url, "solo");
    ASSERT_NE(one, nullptr);
    for (const pb::EvalJob& j : Run60({one.get()}, "one server, PostgreSQL")) {
      EXPECT_EQ(j.state(), pb::JOB_STATE_SUCCEEDED) << j.DebugString();
    }
  }
  ASSERT_TRUE(pg_->Sql(url.substr(url.rfind('/') + 1), "DELETE FROM jobs").ok());

  std::vector<std::unique_ptr<ServerProcess>> servers;
  for (const char* name : {"s1", "s2", "s3"}) servers.push_back(StartServer(url, name));
  for (const auto& s : servers) ASSERT_NE(s, nullptr);
  std::vector<pb::EvalJob> jobs =
      Run60({servers[0].get(), servers[1].get(), servers[2].get()}, "three servers, PostgreSQL");
  std::set<std::string> ids;
  std::map<std::string, int> per_server;
  google::protobuf::util::MessageDifferencer diff;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const pb::EvalJob& j = jobs[i];
    ASSERT_EQ(j.state(), pb::JOB_STATE_SUCCEEDED) << j.DebugString();
    ids.insert(j.id());
    ASSERT_EQ(j.attempts_size(), 1) << j.DebugString();  // ran exactly once
    EXPECT_EQ(j.attempts(0).server(), j.server());
    EXPECT_EQ(j.attempts(0).outcome(), "SUCCEEDED");
    ++per_server[j.server()];
    EXPECT_TRUE(diff.Compare(WithoutTimings(j.result()), want[i % 6])) << j.id();
    EXPECT_FALSE(j.result().device().empty());
    EXPECT_FALSE(j.result().dtype().empty());
  }
  EXPECT_EQ(ids.size(), 60u);
  for (const auto& [server, n] : per_server)
    std::cout << "[measure] " << server << " ran " << n << "\n";
  const std::string db = url.substr(url.rfind('/') + 1);
  EXPECT_EQ(*pg_->Sql(db, "SELECT count(*) FROM jobs WHERE state = 'SUCCEEDED' AND attempt = 1"),
            "60");
  // One view: every server lists all 60, and `info` shows the three.
  for (const auto& s : servers) {
    nlohmann::json list = testing::RunCliJson(s->address(), {"list", "--limit", "100"});
    EXPECT_EQ(list["jobs"].size(), 60u);
    nlohmann::json info = testing::RunCliJson(s->address(), {"info"});
    EXPECT_EQ(info["fleet"].size(), 3u) << info.dump();
  }
  CommandResult ls = testing::RunCli(servers[0]->address(), {"ls", "--fleet"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_THAT(ls.out, HasSubstr("fleet: 3 live server(s)\n  s1  cpu ("));
  EXPECT_THAT(ls.out, HasSubstr("resident: targets [t], datasets [big, d], drafters []"));
}

TEST_F(FleetE2eTest, Kill9OfTheRunningServerRerunsTheJobElsewhere) {
  const std::string url = NewDatabase();
  auto a = StartServer(url, "a", "3");
  auto b = StartServer(url, "b", "3");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::map<std::string, ServerProcess*> by_name = {{"a", a.get()}, {"b", b.get()}};
  Client ca(a->address());
  pb::EvalJob job = ca.Submit(Request(data_, 0, "big"));
  pb::EvalJob running = ca.WaitRunning(job.id());
  const std::string victim = running.server();
  ASSERT_TRUE(victim == "a" || victim == "b") << running.DebugString();
  const std::string survivor = victim == "a" ? "b" : "a";
  const Clock::time_point killed = Clock::now();
  by_name[victim]->Stop(SIGKILL);

  // Followed from the survivor while it waits for the lease and reruns it.
  Client cs(by_name[survivor]->address());
  double restart_seconds = -1;
  for (int i = 0; i < 3000 && restart_seconds < 0; ++i) {
    pb::EvalJob j = cs.Get(job.id());
    if (j.attempts_size() == 2) restart_seconds = Seconds(Clock::now() - killed);
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_GE(restart_seconds, 0) << "the job never restarted";
  std::cout << "[measure] kill -9 to restart elsewhere: " << restart_seconds
            << " s (lease 3 s, heartbeat 0.5 s)\n";
  pb::EvalJob done = cs.WaitDone(job.id(), 300);
  ASSERT_EQ(done.state(), pb::JOB_STATE_SUCCEEDED) << done.DebugString();
  ASSERT_EQ(done.attempts_size(), 2);
  EXPECT_EQ(done.attempts(0).server(), victim);
  EXPECT_EQ(done.attempts(0).outcome(), "lease expired: the server stopped renewing it");
  EXPECT_EQ(done.attempts(1).server(), survivor);
  EXPECT_EQ(done.attempts(1).outcome(), "SUCCEEDED");
  EXPECT_EQ(done.server(), survivor);
  EXPECT_EQ(done.result().samples(), kBigSamples);
  CommandResult status = testing::RunCli(by_name[survivor]->address(), {"status", job.id()});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr(absl::StrCat("1. ", victim, " from ")));
  EXPECT_THAT(status.out, HasSubstr(": lease expired: the server stopped renewing it\n"));
  EXPECT_THAT(status.out, HasSubstr(absl::StrCat("2. ", survivor, " from ")));
}

TEST_F(FleetE2eTest, CancelAndWatchThroughAServerNotRunningTheJob) {
  const std::string url = NewDatabase();
  auto a = StartServer(url, "a");
  auto b = StartServer(url, "b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  Client ca(a->address()), cb(b->address());
  pb::EvalJob job = ca.Submit(Request(data_, 0, "big"));
  pb::EvalJob running = ca.WaitRunning(job.id());
  Client& other = running.server() == "a" ? cb : ca;

  // WatchEval on the other server follows the job to its end.
  grpc::ClientContext watch_ctx;
  watch_ctx.set_deadline(std::chrono::system_clock::now() + 120s);
  pb::WatchEvalRequest watch_req;
  watch_req.set_id(job.id());
  auto stream = other.stub->WatchEval(&watch_ctx, watch_req);
  pb::EvalJob first;
  ASSERT_TRUE(stream->Read(&first));
  EXPECT_EQ(first.state(), pb::JOB_STATE_RUNNING);

  pb::EvalJob cancelled;
  grpc::Status s = other.Cancel(job.id(), &cancelled);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(cancelled.state(), pb::JOB_STATE_CANCELLED) << cancelled.DebugString();
  EXPECT_EQ(cancelled.error_message(), "cancelled while running");
  pb::EvalJob last = first, update;
  while (stream->Read(&update)) last = update;
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(last.state(), pb::JOB_STATE_CANCELLED);
  EXPECT_EQ(ca.Get(job.id()).state(), pb::JOB_STATE_CANCELLED);

  pb::EvalJob again;
  s = other.Cancel(job.id(), &again);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(s.error_message(),
            absl::StrCat("job ", job.id(), " already finished (CANCELLED); nothing to cancel"));
}

TEST_F(FleetE2eTest, AJobNamingAResidentDrafterRunsOnlyWhereItIsResident) {
  const std::string url = NewDatabase();
  auto a = StartServer(url, "a");
  auto b = StartServer(url, "b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  CommandResult load =
      testing::RunCli(b->address(), {"load-drafter", data_ + "/drafter", "--name", "m"});
  ASSERT_EQ(load.exit_code, 0) << load.err;
  std::this_thread::sleep_for(1500ms);  // b's next heartbeats carry it
  Client ca(a->address());
  for (int i = 0; i < 4; ++i) {  // submitted to a, which does not hold m
    pb::EvalRequest r = Request(data_, 1 + i);
    r.clear_checkpoint_path();
    r.set_drafter("m");
    pb::EvalJob job = ca.Submit(r);
    EXPECT_EQ(job.placement(),
              "runs only on a server holding one target only, dataset 'd', drafter 'm' (now: b); "
              "name objects by path to run on any server");
    pb::EvalJob done = ca.WaitDone(job.id());
    EXPECT_EQ(done.state(), pb::JOB_STATE_SUCCEEDED) << done.DebugString();
    EXPECT_EQ(done.server(), "b");
  }
  // A dataset loaded by name on b only (not a path, not in the fleet's
  // config): the job waits for b and says so.
  load = testing::RunCli(b->address(), {"load-dataset", data_ + "/dataset", "--name", "only-b"});
  ASSERT_EQ(load.exit_code, 0) << load.err;
  std::this_thread::sleep_for(1500ms);
  pb::EvalJob pinned = ca.Submit(Request(data_, 2, "only-b"));
  EXPECT_EQ(pinned.placement(),
            "runs only on a server holding one target only, dataset 'only-b' (now: b); name "
            "objects by path to run on any server");
  CommandResult status = testing::RunCli(a->address(), {"status", pinned.id()});
  EXPECT_THAT(status.out, HasSubstr("runs only on a server holding one target only, dataset "
                                    "'only-b' (now: b)"));
  pb::EvalJob pinned_done = ca.WaitDone(pinned.id());
  EXPECT_EQ(pinned_done.state(), pb::JOB_STATE_SUCCEEDED) << pinned_done.DebugString();
  EXPECT_EQ(pinned_done.server(), "b");

  pb::EvalRequest nowhere = Request(data_, 1);
  nowhere.clear_checkpoint_path();
  nowhere.set_drafter("nope");
  pb::EvalJob refused;
  grpc::Status s = ca.TrySubmit(nowhere, &refused);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(),
            "no resident drafter named 'nope' (resident: none); no live server of the fleet "
            "holds it either");
}

// Neither server holds anything: the job names target, dataset and drafter
// by path, so either claims it and loads them; the numbers are a single
// server's with the same objects loaded by hand.
TEST_F(FleetE2eTest, ObjectsNamedByPathAreLoadedOnDemandByAnyServer) {
  pb::EvalResult want;
  {
    auto single = ServerProcess::Start(dir_->Join("state-single-path"), {"--data-root", data_});
    ASSERT_TRUE(single.ok()) << single.status();
    for (const char* what : {"target", "dataset"}) {
      CommandResult r =
          testing::RunCli((*single)->address(), {absl::StrCat("load-", what), data_ + "/" + what});
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    }
    Client c((*single)->address());
    pb::EvalJob done = c.WaitDone(c.Submit(Request(data_, 0, "dataset")).id());
    ASSERT_EQ(done.state(), pb::JOB_STATE_SUCCEEDED) << done.DebugString();
    want = WithoutTimings(done.result());
  }
  const std::string url = NewDatabase();
  auto a = StartServer(url, "a", "10", /*load=*/false);
  auto b = StartServer(url, "b", "10", /*load=*/false);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const std::string target = fs::weakly_canonical(data_ + "/target").string();
  const std::string dataset = fs::weakly_canonical(data_ + "/dataset").string();
  pb::EvalRequest r = Request(data_, 0, "");
  r.set_dataset_path(data_ + "/dataset/");
  r.set_target_path(data_ + "/target");
  Client ca(a->address());
  pb::EvalJob job = ca.Submit(r);
  EXPECT_EQ(job.placement(),
            absl::StrCat("runs on any server; loads target 'target' from '", target,
                         "', dataset 'dataset' from '", dataset, "' where not resident"));
  EXPECT_EQ(job.request().dataset(), "dataset");
  pb::EvalJob done = ca.WaitDone(job.id());
  ASSERT_EQ(done.state(), pb::JOB_STATE_SUCCEEDED) << done.DebugString();
  google::protobuf::util::MessageDifferencer diff;
  EXPECT_TRUE(diff.Compare(WithoutTimings(done.result()), want))
      << done.result().DebugString() << want.DebugString();
  // The server that ran it keeps them resident (affinity for the next job).
  nlohmann::json ls =
      testing::RunCliJson(done.server() == "a" ? a->address() : b->address(), {"ls"});
  EXPECT_THAT(ls.dump(), HasSubstr(absl::StrCat("\"sourcePath\":\"", dataset, "\"")));

  // The same through the client, submitted to the other server.
  CommandResult cli = testing::RunCli(
      b->address(), {"eval", "--checkpoint", data_ + "/drafter", "--dataset-path",
                     data_ + "/dataset", "--target-path", data_ + "/target", "--anchors", "all"});
  ASSERT_EQ(cli.exit_code, 0) << cli.out << cli.err;
  EXPECT_THAT(cli.out, HasSubstr("accept length (pooled over blocks)"));
  CommandResult sync = testing::RunCli(
      b->address(),
      {"eval", "--checkpoint", data_ + "/drafter", "--dataset-path", data_ + "/dataset", "--sync"});
  EXPECT_EQ(sync.exit_code, 64);
  EXPECT_THAT(sync.err, HasSubstr("eval: --dataset-path and --target-path name objects a fleet's "
                                  "job loads; drop --sync"));

  pb::EvalRequest relative = r;
  relative.set_dataset_path("dataset");
  pb::EvalJob refused;
  grpc::Status s = ca.TrySubmit(relative, &refused);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "dataset_path 'dataset' is not absolute; every server of the fleet loads it from its "
            "own file system, so give the absolute path");
}

// Names the fleet's config (its preload list) maps to paths run anywhere: a
// server that lacks one (here: unloaded since) loads it again on demand.
TEST_F(FleetE2eTest, NamesOfTheFleetsConfigAreLoadedOnDemand) {
  const std::string config = dir_->Join("fleet-config.yaml");
  std::ofstream(config) << "preload:\n  targets:\n    - {name: t, path: " << data_
                        << "/target}\n  datasets:\n    - {name: cfgset, path: " << data_
                        << "/dataset}\n";
  const std::string url = NewDatabase();
  auto a = StartServer(url, "a", "10", /*load=*/false, {"--config", config});
  ASSERT_NE(a, nullptr);
  CommandResult unload = testing::RunCli(a->address(), {"unload", "dataset", "cfgset"});
  ASSERT_EQ(unload.exit_code, 0) << unload.err;
  pb::EvalRequest r = Request(data_, 1, "cfgset");
  r.set_target("t");
  Client c(a->address());
  pb::EvalJob job = c.Submit(r);
  EXPECT_EQ(
      job.placement(),
      absl::StrCat("runs on any server; loads target 't' from '",
                   fs::weakly_canonical(data_ + "/target").string(), "', dataset 'cfgset' from '",
                   fs::weakly_canonical(data_ + "/dataset").string(), "' where not resident"));
  pb::EvalJob done = c.WaitDone(job.id());
  ASSERT_EQ(done.state(), pb::JOB_STATE_SUCCEEDED) << done.DebugString();
  nlohmann::json ls = testing::RunCliJson(a->address(), {"ls"});
  EXPECT_THAT(ls.dump(), HasSubstr("\"name\":\"cfgset\""));
}

// A server whose budget cannot hold what the job names by path refuses it:
// the job goes back to the queue for another server (not to this one
// again), and fails (RESOURCE_EXHAUSTED naming the bytes) only when every
// live server has refused it.
TEST_F(FleetE2eTest, AnOnDemandLoadOverTheBudgetGoesToAServerThatCanHoldIt) {
  const std::string url = NewDatabase();
  auto small = StartServer(url, "small", "10", /*load=*/false, {"--max-resident-bytes", "1000"});
  auto big = StartServer(url, "big", "10", /*load=*/false);
  ASSERT_NE(small, nullptr);
  ASSERT_NE(big, nullptr);
  std::ifstream in(data_ + "/target/config.json");
  const nlohmann::json config = nlohmann::json::parse(in);
  const int64_t matrix = config["vocab_size"].get<int64_t>() *
                         config["hidden_size"].get<int64_t>() * 4;  // fp32 on the CPU
  const int64_t need = config.value("tie_word_embeddings", false) ? matrix : 2 * matrix;
  const std::string refusal = absl::StrCat(
      "loading target 'target' from '", fs::weakly_canonical(data_ + "/target").string(),
      "' on demand on server small: loading target 'target' needs ", need,
      absl::StrFormat(" bytes (%.2f GiB)", need / double(1 << 30)),
      " (estimated from config.json) but 0 bytes (0.00 GiB) of the 1000 bytes (0.00 GiB) "
      "resident budget is in use; unload something first");
  pb::EvalRequest r = Request(data_, 1, "");
  r.set_dataset_path(data_ + "/dataset");
  r.set_target_path(data_ + "/target");
  Client c(small->address());

  // big is paused (alive in the fleet, claiming nothing): small claims the
  // job, refuses it and hands it back; big runs it once resumed.
  ASSERT_EQ(kill(big->pid(), SIGSTOP), 0);
  const std::string id = c.Submit(r).id();
  pb::EvalJob handed;
  for (int i = 0;
       i < 500 && (handed.attempts_size() == 0 || handed.state() == pb::JOB_STATE_RUNNING); ++i) {
    std::this_thread::sleep_for(10ms);
    handed = c.Get(id);
  }
  ASSERT_EQ(kill(big->pid(), SIGCONT), 0);
  EXPECT_EQ(handed.state(), pb::JOB_STATE_QUEUED) << handed.DebugString();
  pb::EvalJob done = c.WaitDone(id);
  ASSERT_EQ(done.state(), pb::JOB_STATE_SUCCEEDED) << done.DebugString();
  ASSERT_EQ(done.attempts_size(), 2) << done.DebugString();
  EXPECT_EQ(done.attempts(0).server(), "small");
  EXPECT_EQ(done.attempts(0).outcome(), "refused: " + refusal);
  EXPECT_EQ(done.attempts(1).server(), "big");
  EXPECT_EQ(done.attempts(1).outcome(), "SUCCEEDED");
  EXPECT_EQ(done.error_message(), "");

  // Alone, small is the last live server that could: the job fails.
  big.reset();
  pb::EvalJob failed = c.WaitDone(c.Submit(r).id());
  ASSERT_EQ(failed.state(), pb::JOB_STATE_FAILED) << failed.DebugString();
  EXPECT_EQ(failed.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(failed.error_message(),
            "no live server of the fleet can hold what this job names: " + refusal);
  ASSERT_EQ(failed.attempts_size(), 1);
  EXPECT_EQ(failed.attempts(0).outcome(), "refused: " + refusal);
}

int64_t Bytes(const nlohmann::json& ls, const std::string& name) {
  for (const nlohmann::json& r : ls["resources"]) {
    if (r["name"] == name) return std::stoll(r["bytes"].get<std::string>());
  }
  ADD_FAILURE() << name << " is not resident: " << ls.dump();
  return 0;
}

// A budget that holds the target, the drafter and one dataset: the second
// dataset named by path unloads the first (loaded on demand, unused now)
// before it loads; what was loaded by hand stays.
TEST_F(FleetE2eTest, AFullBudgetFirstFreesEarlierOnDemandLoads) {
  fs::copy(data_ + "/dataset", data_ + "/dataset-copy", fs::copy_options::recursive);
  int64_t target = 0, drafter = 0, dataset = 0, estimate = 0;
  {
    auto probe = ServerProcess::Start(dir_->Join("state-probe"), {"--data-root", data_});
    ASSERT_TRUE(probe.ok()) << probe.status();
    for (auto [what, path] : {std::pair<std::string, std::string>{"load-target", "/target"},
                              {"load-drafter", "/drafter"},
                              {"load-dataset", "/dataset"}}) {
      CommandResult r = testing::RunCli((*probe)->address(), {what, data_ + path});
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    }
    nlohmann::json ls = testing::RunCliJson((*probe)->address(), {"ls"});
    target = Bytes(ls, "target");
    drafter = Bytes(ls, "drafter");
    dataset = Bytes(ls, "dataset");
  }
  for (const auto& e : fs::recursive_directory_iterator(data_ + "/dataset")) {
    if (e.path().extension() == ".ckpt") estimate += static_cast<int64_t>(e.file_size());
  }
  const int64_t budget = target + drafter + std::max(dataset, estimate) +
                         std::min(dataset, estimate) / 2;  // one dataset, not two
  const std::string url = NewDatabase();
  auto s =
      StartServer(url, "s", "10", /*load=*/false, {"--max-resident-bytes", absl::StrCat(budget)});
  ASSERT_NE(s, nullptr);
  for (auto [what, path] : {std::pair<std::string, std::string>{"load-target", "/target"},
                            {"load-drafter", "/drafter"}}) {
    CommandResult r = testing::RunCli(s->address(), {what, data_ + path});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  Client c(s->address());
  for (const char* path : {"/dataset", "/dataset-copy"}) {
    pb::EvalRequest r = Request(data_, 1, "");
    r.clear_checkpoint_path();
    r.set_drafter("drafter");
    r.set_dataset_path(data_ + path);
    pb::EvalJob done = c.WaitDone(c.Submit(r).id());
    ASSERT_EQ(done.state(), pb::JOB_STATE_SUCCEEDED) << done.DebugString();
  }
  nlohmann::json ls = testing::RunCliJson(s->address(), {"ls"});
  std::set<std::string> names;
  for (const nlohmann::json& r : ls["resources"]) names.insert(r["name"]);
  EXPECT_EQ(names, (std::set<std::string>{"dataset-copy", "drafter", "target"})) << ls.dump();
}

TEST_F(FleetE2eTest, SchemaIsCreatedInAnEmptyDatabaseAndANewerOneIsRefused) {
  const std::string url = NewDatabase();
  const std::string db = url.substr(url.rfind('/') + 1);
  {
    auto server = StartServer(url, "first");
    ASSERT_NE(server, nullptr);
    EXPECT_EQ(*pg_->Sql(db, "SELECT version FROM schema_version"), "2");
  }
  ASSERT_TRUE(pg_->Sql(db, "UPDATE schema_version SET version = 3").ok());
  CommandResult r = RunCommand({BinaryFromEnv("DFLASH_EVALD"), "--listen", "127.0.0.1:0",
                                "--state-dir", dir_->Join("state-refused"), "--store", url},
                               {}, 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out + r.err,
              HasSubstr("the database's schema is version 3, newer than this server's (2): a "
                        "newer dflash-evald has migrated it. Upgrade this server"));

  CommandResult pw =
      RunCommand({BinaryFromEnv("DFLASH_EVALD"), "--listen", "127.0.0.1:0", "--state-dir",
                  dir_->Join("state-refused"), "--store",
                  absl::StrCat("postgresql://postgres:hunter2@127.0.0.1:", pg_->port(), "/", db)},
                 {}, 60);
  EXPECT_EQ(pw.exit_code, 1);
  EXPECT_THAT(pw.out + pw.err, HasSubstr("the PostgreSQL URL carries a password"));

  CommandResult scheme =
      RunCommand({BinaryFromEnv("DFLASH_EVALD"), "--listen", "127.0.0.1:0", "--state-dir",
                  dir_->Join("state-refused"), "--store", "mysql://db/x"},
                 {}, 60);
  EXPECT_EQ(scheme.exit_code, 1);
  EXPECT_THAT(scheme.out + scheme.err, HasSubstr("--store 'mysql://db/x': expected sqlite:PATH or "
                                                 "postgresql://USER@HOST:PORT/DATABASE"));
}

TEST_F(FleetE2eTest, SqliteStoreAtAChosenPathNeedsNoDatabase) {
  const std::string path = dir_->Join("elsewhere.sqlite3");
  auto server = ServerProcess::Start(dir_->Join("state-sqlite-path"),
                                     {"--data-root", data_, "--store", "sqlite:" + path});
  ASSERT_TRUE(server.ok()) << server.status();
  Load((*server)->address());
  Client c((*server)->address());
  pb::EvalJob done = c.WaitDone(c.Submit(Request(data_, 1)).id());
  EXPECT_EQ(done.state(), pb::JOB_STATE_SUCCEEDED) << done.DebugString();
  EXPECT_EQ(done.attempts_size(), 0);  // single-host jobs have no fleet attempts
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(dir_->Join("state-sqlite-path/results.sqlite3")));
  pb::EvalRequest by_path = Request(data_, 1);
  by_path.set_dataset_path(data_ + "/dataset");
  pb::EvalJob refused;
  grpc::Status s = c.TrySubmit(by_path, &refused);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(s.error_message(),
            "dataset_path and target_path name objects for a fleet's servers to load on demand; "
            "this server has no fleet (see --store): load them and name them with dataset and "
            "target");
  CommandResult ls = testing::RunCli((*server)->address(), {"ls", "--fleet"});
  EXPECT_EQ(ls.exit_code, 1) << ls.out;
  EXPECT_THAT(ls.err, HasSubstr("--fleet: this server has no fleet (its results store is not a "
                                "shared PostgreSQL database; see --store)"));
}

}  // namespace
}  // namespace dflash
