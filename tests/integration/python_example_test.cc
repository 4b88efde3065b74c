// examples/python/submit_per_checkpoint.py (on the dflash_eval package,
// installed by ctest's python_client_install) against a real server: two
// checkpoint folders (step-100, step-200) under one run folder become two
// detached jobs that succeed with run and step labels set; with --gate the
// example exits 4 when a later checkpoint is significantly worse.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/process.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
using ::dflash::testing::BinaryFromEnv;
using ::dflash::testing::CommandResult;
using ::dflash::testing::RunCommand;
using ::dflash::testing::ServerProcess;
using ::testing::HasSubstr;
using json = nlohmann::json;

// The virtualenv python with dflash_eval installed ($DFLASH_EXAMPLE_PY).
std::string ExamplePython() {
  return BinaryFromEnv("DFLASH_EXAMPLE_PY");
}

TEST(PythonExampleTest, SubmitsOneDetachedEvalPerCheckpoint) {
  testing::TempDir dir;
  const std::string data = dir.Join("data");
  testing::MakeTinyFixture(data);
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::string run_dir = data + "/run-py";
  for (const char* step : {"step-100", "step-200"}) {
    fs::create_directories(run_dir + "/" + step);
    fs::copy(data + "/drafter", run_dir + "/" + step, fs::copy_options::recursive);
  }
  auto server = ServerProcess::Start(dir.Join("state"), {"--data-root", data});
  ASSERT_THAT(server, testing::IsOk());
  const std::string address = (*server)->address();
  auto cli = [&](std::vector<std::string> args) {
    return testing::RunCli(address, std::move(args));
  };
  ASSERT_EQ(cli({"load-target", data + "/target", "--name", "t"}).exit_code, 0);
  ASSERT_EQ(cli({"load-dataset", data + "/dataset", "--name", "d"}).exit_code, 0);

  CommandResult r = RunCommand(
      {ExamplePython(),
       BinaryFromEnv("DFLASH_SOURCE_DIR") + "/examples/python/submit_per_checkpoint.py", "--server",
       address, "--dataset", "d", "--label", "source=example", "--wait", run_dir},
      {}, 300);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("run run-py step 100"));
  EXPECT_THAT(r.out, HasSubstr("run run-py step 200"));
  EXPECT_THAT(r.out, HasSubstr("accept length"));

  CommandResult list = cli({"--json", "list", "--run", "run-py"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  json jobs = json::parse(list.out)["jobs"];
  ASSERT_EQ(jobs.size(), 2u) << list.out;
  std::vector<std::string> steps;
  for (const json& j : jobs) {
    EXPECT_EQ(j["state"], "JOB_STATE_SUCCEEDED") << j.dump();
    EXPECT_EQ(j["request"]["labels"]["source"], "example");
    EXPECT_EQ(j["request"]["unloadAfter"], true);
    EXPECT_GT(j["result"]["acceptLengthPooled"].get<double>(), 1.0);
    steps.push_back(j["request"]["step"]);
    // The printed ids are the jobs the server holds.
    EXPECT_THAT(r.out, HasSubstr("submitted " + j["id"].get<std::string>()));
  }
  EXPECT_THAT(steps, ::testing::UnorderedElementsAre("100", "200"));

  // --gate previous: step-200 holds other weights (drafter-v1new), far worse
  // on this data: the example prints the server's verdict and exits 4.
  const std::string gate_dir = data + "/run-gate";
  fs::create_directories(gate_dir + "/step-100");
  fs::create_directories(gate_dir + "/step-200");
  fs::copy(data + "/drafter", gate_dir + "/step-100", fs::copy_options::recursive);
  fs::copy(data + "/drafter-v1new", gate_dir + "/step-200", fs::copy_options::recursive);
  CommandResult gated =
      RunCommand({ExamplePython(),
                  BinaryFromEnv("DFLASH_SOURCE_DIR") + "/examples/python/submit_per_checkpoint.py",
                  "--server", address, "--dataset", "d", "--gate", "previous", gate_dir},
                 {}, 300);
  EXPECT_EQ(gated.exit_code, 4) << gated.out << gated.err;
  EXPECT_THAT(gated.out, HasSubstr("gate: pass (no reference: no SUCCEEDED job of run 'run-gate'"));
  EXPECT_THAT(gated.out, HasSubstr("gate: WORSE than "));

  // A bad path is a clear error before anything is submitted.
  CommandResult bad =
      RunCommand({ExamplePython(),
                  BinaryFromEnv("DFLASH_SOURCE_DIR") + "/examples/python/submit_per_checkpoint.py",
                  "--server", address, "--dataset", "d", dir.Join("nothing-here")},
                 {}, 60);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("no such file or directory"));

  // No server there: exit 2, as the CLI's, with the package's message.
  CommandResult down =
      RunCommand({ExamplePython(),
                  BinaryFromEnv("DFLASH_SOURCE_DIR") + "/examples/python/submit_per_checkpoint.py",
                  "--server", "127.0.0.1:1", "--dataset", "d", run_dir + "/step-100"},
                 {}, 60);
  EXPECT_EQ(down.exit_code, 2) << down.out << down.err;
  EXPECT_THAT(down.err, HasSubstr("UNAVAILABLE: cannot reach server at 127.0.0.1:1"));
}

}  // namespace
}  // namespace dflash
