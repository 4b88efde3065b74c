#include "integration/tiny_fixture.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "test_util/python_fixtures.h"

namespace dflash::testing {

void MakeLongDataset(const std::string& data, const std::string& dir, int copies) {
  namespace fs = std::filesystem;
  fs::create_directories(dir + "/rows");
  fs::copy_file(data + "/dataset/dataset.json", dir + "/dataset.json");
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(data + "/dataset")) {
    if (e.path().extension() == ".ckpt") files.push_back(e.path().string());
  }
  ASSERT_FALSE(files.empty());
  for (int k = 0; k < copies; ++k) {
    fs::create_hard_link(files[k % files.size()],
                         dir + "/rows/data_" + std::to_string(k) + ".ckpt");
  }
}

void MakeTinyFixture(const std::string& dir) {
  const std::string made = PythonFixtureDir("make_fixture_tiny");
  if (made.empty()) return;  // PythonFixtureDir added the failure
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::filesystem::copy(made, dir, std::filesystem::copy_options::recursive, ec);
  if (!ec) std::filesystem::remove(std::filesystem::path(dir) / ".done", ec);
  EXPECT_FALSE(ec) << "copying " << made << " to " << dir << ": " << ec.message();
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

nlohmann::json RunReferenceEval(const std::string& data, const std::string& drafter,
                                const std::string& dataset, const std::vector<std::string>& args) {
  TempDir out;
  std::vector<std::string> argv = {
      BinaryFromEnv("DFLASH_FIXTURE_PY"),
      BinaryFromEnv("DFLASH_SOURCE_DIR") + "/tools/dflash_ref/reference.py",
      "eval",
      "--drafter",
      data + "/" + drafter,
      "--target",
      data + "/target",
      "--dataset",
      data + "/" + dataset,
      "--json",
      out.Join("r.json")};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult r = RunCommand(argv, {}, 300);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  if (r.exit_code != 0) return nlohmann::json::object();
  std::ifstream in(out.Join("r.json"));
  return nlohmann::json::parse(in);
}

void ExpectNearEach(const nlohmann::json& got, const nlohmann::json& want, double tol,
                    const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what << ": " << got.dump() << " vs " << want.dump();
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i].get<double>(), want[i].get<double>(), tol) << what << "[" << i << "]";
  }
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

int64_t JsonInt(const nlohmann::json& j) {
  return j.is_string() ? std::stoll(j.get<std::string>()) : j.get<int64_t>();
}

namespace {
int64_t Int(const nlohmann::json& j) {
  return JsonInt(j);
}
int64_t IntOr0(const nlohmann::json& obj, const char* key) {
  return obj.contains(key) ? Int(obj[key]) : 0;
}
}  // namespace

void ExpectSameMetrics(const nlohmann::json& got, const nlohmann::json& want) {
  ASSERT_TRUE(got.contains("positions")) << got.dump();
  EXPECT_EQ(Int(got["blocks"]), want["blocks"].get<int64_t>());
  EXPECT_NEAR(got["acceptLengthPooled"].get<double>(), want["accept_length_pooled"].get<double>(),
              1e-9);
  EXPECT_NEAR(got["tau"].get<double>(), want["tau"].get<double>(), 1e-9);
  ASSERT_EQ(got["positions"].size(), want["positions"].size());
  const bool dflash2 = want.value("family", "dflash") == "dflash2";
  // Scored to each block's first miss (replay's default): the per-position
  // marginals are not measured, everything acceptance reads still is.
  const bool marginals = !got.value("positionsToFirstMiss", false);
  for (size_t j = 0; j < want["positions"].size(); ++j) {
    const nlohmann::json& g = got["positions"][j];
    const nlohmann::json& w = want["positions"][j];
    EXPECT_EQ(Int(g["counted"]), w["counted"].get<int64_t>()) << j;
    EXPECT_EQ(IntOr0(g, "correct"), marginals ? w["correct"].get<int64_t>() : 0) << j;
    EXPECT_EQ(Int(g["accepted"]), w["accepted"].get<int64_t>()) << j;
    if (!dflash2 || !marginals) continue;
    EXPECT_EQ(IntOr0(g, "unaryCorrect"), w["unary_correct"].get<int64_t>()) << j;
    EXPECT_EQ(IntOr0(g, "covered"), w["covered"].get<int64_t>()) << j;
    EXPECT_EQ(IntOr0(g, "tfCorrect"), w["tf_correct"].get<int64_t>()) << j;
  }
  ASSERT_EQ(got["acceptedHistogram"].size(), want["accepted_histogram"].size());
  for (size_t n = 0; n < want["accepted_histogram"].size(); ++n) {
    EXPECT_EQ(Int(got["acceptedHistogram"][n]), want["accepted_histogram"][n].get<int64_t>());
  }
  if (!dflash2) return;
  EXPECT_NEAR(got.value("unaryAcceptLengthPooled", 0.0),
              want["unary_accept_length_pooled"].get<double>(), 1e-9);
  EXPECT_NEAR(got.value("oracleAcceptLengthPooled", 0.0),
              want["oracle_accept_length_pooled"].get<double>(), 1e-9);
  const nlohmann::json& fm = got.value("firstMiss", nlohmann::json::object());
  EXPECT_EQ(IntOr0(fm, "allAccepted"), want["first_miss"]["all_accepted"].get<int64_t>());
  EXPECT_EQ(IntOr0(fm, "coverageMiss"), want["first_miss"]["coverage_miss"].get<int64_t>());
  EXPECT_EQ(IntOr0(fm, "rankingError"), want["first_miss"]["ranking_error"].get<int64_t>());
  EXPECT_EQ(IntOr0(got, "selectorNearTies"),
            marginals ? want["selector_near_ties"].get<int64_t>() : 0);
}

}  // namespace dflash::testing
