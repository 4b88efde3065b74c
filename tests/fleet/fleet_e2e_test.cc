// A fleet: real dflash-evald servers on one real PostgreSQL database
// (test_util/postgres_server.h) over the tiny generated fixture. 60 jobs
// submitted round-robin to three servers each succeed exactly once with the
// numbers of a single SQLite server; kill -9 of the server running a job ->
// another server runs it again (attempt 2) and it succeeds; cancel and watch
// through a server that is not running the job; the schema is created in an
// empty database and a newer one is refused; a SQLite store needs no
// database. Timings (per-job overhead of PostgreSQL vs SQLite,
// death-to-restart) are printed as "[measure]" lines. Loads on demand:
// fleet_on_demand_e2e_test.cc.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "dflash/eval/v1/service.grpc.pb.h"
#include "fleet/fleet_e2e_fixture.h"
#include "fleet/fleet_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/postgres_server.h"
#include "test_util/process.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
namespace pb = ::dflash::eval::v1;
using ::dflash::testing::BinaryFromEnv;
using ::dflash::testing::CommandResult;
using ::dflash::testing::FleetE2eTest;
using ::dflash::testing::RunCommand;
using ::dflash::testing::Seconds;
using ::dflash::testing::ServerProcess;
using ::dflash::testing::WithoutTimings;
using ::testing::HasSubstr;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Client = testing::JobClient;

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
  pb::EvalJob job = ca.Submit(testing::FleetRequest(data_, 0, "big"));
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
  pb::EvalJob job = ca.Submit(testing::FleetRequest(data_, 0, "big"));
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
  pb::EvalJob done = c.WaitDone(c.Submit(testing::FleetRequest(data_, 1)).id());
  EXPECT_EQ(done.state(), pb::JOB_STATE_SUCCEEDED) << done.DebugString();
  EXPECT_EQ(done.attempts_size(), 0);  // single-host jobs have no fleet attempts
  EXPECT_TRUE(fs::exists(path));
  EXPECT_FALSE(fs::exists(dir_->Join("state-sqlite-path/results.sqlite3")));
  pb::EvalRequest by_path = testing::FleetRequest(data_, 1);
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
