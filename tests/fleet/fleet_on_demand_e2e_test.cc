// A fleet's loads on demand: real dflash-evald servers on one real
// PostgreSQL database over the tiny generated fixture. A job naming a
// resident drafter runs only where it is resident; objects named by path
// (or by a name of the fleet's config) are loaded by any server; a load over
// one server's budget goes to a server that can hold it; a full budget first
// frees earlier loads on demand.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dflash/eval/v1/service.grpc.pb.h"
#include "fleet/fleet_e2e_fixture.h"
#include "fleet/fleet_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/process.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
namespace pb = ::dflash::eval::v1;
using ::dflash::testing::BinaryFromEnv;
using ::dflash::testing::CommandResult;
using ::dflash::testing::FleetE2eTest;
using ::dflash::testing::RunCommand;
using ::dflash::testing::ServerProcess;
using ::dflash::testing::WithoutTimings;
using ::testing::HasSubstr;
using namespace std::chrono_literals;
using Client = testing::JobClient;

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
    pb::EvalRequest r = testing::FleetRequest(data_, 1 + i);
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
  pb::EvalJob pinned = ca.Submit(testing::FleetRequest(data_, 2, "only-b"));
  EXPECT_EQ(pinned.placement(),
            "runs only on a server holding one target only, dataset 'only-b' (now: b); name "
            "objects by path to run on any server");
  CommandResult status = testing::RunCli(a->address(), {"status", pinned.id()});
  EXPECT_THAT(status.out, HasSubstr("runs only on a server holding one target only, dataset "
                                    "'only-b' (now: b)"));
  pb::EvalJob pinned_done = ca.WaitDone(pinned.id());
  EXPECT_EQ(pinned_done.state(), pb::JOB_STATE_SUCCEEDED) << pinned_done.DebugString();
  EXPECT_EQ(pinned_done.server(), "b");

  pb::EvalRequest nowhere = testing::FleetRequest(data_, 1);
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
    pb::EvalJob done = c.WaitDone(c.Submit(testing::FleetRequest(data_, 0, "dataset")).id());
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
  pb::EvalRequest r = testing::FleetRequest(data_, 0, "");
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
  pb::EvalRequest r = testing::FleetRequest(data_, 1, "cfgset");
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
  pb::EvalRequest r = testing::FleetRequest(data_, 1, "");
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
    pb::EvalRequest r = testing::FleetRequest(data_, 1, "");
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

}  // namespace
}  // namespace dflash
