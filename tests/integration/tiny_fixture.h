// File: tiny_fixture.h
// What the integration tests share: the tiny generated model
// (tools/dflash_ref/make_fixture.py --size tiny: target, drafter, datasets
// and the Python reference's expected results) and running the real client.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gtest/gtest.h"
#include "test_util/process.h"
#include "test_util/temp_dir.h"

namespace dflash::testing {

// A dataset that takes a job minutes: the tiny dataset's samples `copies`
// times over, as hard links in `dir` (inside the data root). For tests that
// need a job still RUNNING when they look.
void MakeLongDataset(const std::string& data, const std::string& dir, int copies = 400);

// An int64 of a proto JSON reply (written as a string there).
int64_t JsonInt(const nlohmann::json& j);

// Copies the tiny fixture into `dir` (a test's own folder: tests may edit
// it). ctest makes it once per run (the fixture step make_fixture_tiny,
// test_util/python_fixtures.h); adds a test failure when it is missing.
void MakeTinyFixture(const std::string& dir);

// Runs `dflash-eval --server ADDRESS args...`.
CommandResult RunCli(const std::string& address, std::vector<std::string> args);

// The same with --json; the parsed reply, or {} (and a test failure) when the
// command fails.
nlohmann::json RunCliJson(const std::string& address, std::vector<std::string> args);

// tools/dflash_ref/reference.py eval on the fixture in `data`: drafter
// `data/drafter`, target `data/target`, dataset `data/dataset`, then `args`.
// The reference's JSON, or {} (and a test failure) when it fails.
nlohmann::json RunReferenceEval(const std::string& data, const std::string& drafter,
                                const std::string& dataset, const std::vector<std::string>& args);

// got[i] within `tol` of want[i] for every i, the sizes equal; `what` names
// the array in a failure.
void ExpectNearEach(const nlohmann::json& got, const nlohmann::json& want, double tol,
                    const std::string& what);

// The service's result (proto JSON, lowerCamelCase) equals the Python
// reference's (tools/dflash_ref, snake_case) count for count: blocks, accept
// length, tau, per-position counts, the histogram and, when the reference
// reports a DFlash 2 drafter, the selector's metrics.
void ExpectSameMetrics(const nlohmann::json& got, const nlohmann::json& want);

// A test suite with one real dflash-evald over the tiny fixture, target "t",
// dataset "d" and drafter "m" resident. Tests may add files under data_.
// A suite that needs server flags defines its own SetUpTestSuite calling
// SetUpTinyServer with them.
class TinyServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { SetUpTinyServer({}); }
  static void TearDownTestSuite();
  // The fixture into data_, the server (state in dir_/state) with `flags`
  // added to --data-root, then t, d and m loaded.
  static void SetUpTinyServer(const std::vector<std::string>& flags);

  static CommandResult Cli(std::vector<std::string> args) {
    return RunCli(server_->address(), std::move(args));
  }
  static nlohmann::json CliJson(std::vector<std::string> args) {
    return RunCliJson(server_->address(), std::move(args));
  }

  static TempDir* dir_;
  static std::string data_;
  static ServerProcess* server_;
};

}  // namespace dflash::testing
