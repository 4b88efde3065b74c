#include "integration/tiny_fixture.h"

#include "gtest/gtest.h"

namespace dflash::testing {

void MakeTinyFixture(const std::string& dir) {
  CommandResult gen = RunCommand(
      {BinaryFromEnv("DFLASH_FIXTURE_PY"),
       BinaryFromEnv("DFLASH_SOURCE_DIR") + "/tools/dflash_ref/make_fixture.py", dir, "--size",
       "tiny"},
      {}, 300);
  EXPECT_EQ(gen.exit_code, 0) << gen.out << gen.err;
}

CommandResult RunCli(const std::string& address, std::vector<std::string> args) {
  std::vector<std::string> argv = {BinaryFromEnv("DFLASH_EVAL"), "--server", address};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, {}, 300);
}

nlohmann::json RunCliJson(const std::string& address, std::vector<std::string> args) {
  args.insert(args.begin(), "--json");
  CommandResult r = RunCli(address, std::move(args));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

TempDir* TinyServerTest::dir_ = nullptr;
std::string TinyServerTest::data_;
ServerProcess* TinyServerTest::server_ = nullptr;

void TinyServerTest::SetUpTinyServer(const std::vector<std::string>& flags) {
  dir_ = new TempDir();
  data_ = dir_->Join("data");
  MakeTinyFixture(data_);
  ASSERT_FALSE(::testing::Test::HasFailure());
  std::vector<std::string> args = {"--data-root", data_};
  args.insert(args.end(), flags.begin(), flags.end());
  auto server = ServerProcess::Start(dir_->Join("state"), args);
  ASSERT_TRUE(server.ok()) << server.status();
  server_ = std::move(server).value().release();
  ASSERT_EQ(Cli({"load-target", data_ + "/target", "--name", "t"}).exit_code, 0);
  ASSERT_EQ(Cli({"load-dataset", data_ + "/dataset", "--name", "d"}).exit_code, 0);
  ASSERT_EQ(Cli({"load-drafter", data_ + "/drafter", "--name", "m"}).exit_code, 0);
}

void TinyServerTest::TearDownTestSuite() {
  delete server_;
  server_ = nullptr;
  delete dir_;
  dir_ = nullptr;
}

}  // namespace dflash::testing
