// File: jobs_e2e_fixture.h
// What the evaluation-job tests against the real dflash-evald share
// (jobs_e2e_test.cc, jobs_durability_e2e_test.cc): a raw-stub client, the
// request they submit (clients: job_client.h), the comparison of results, and a suite with the tiny
// fixture plus a long dataset, where each test starts its own servers.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "dflash/eval/v1/service.grpc.pb.h"
#include "gtest/gtest.h"
#include "integration/job_client.h"
#include "test_util/process.h"
#include "test_util/temp_dir.h"

namespace dflash::testing {

namespace pb = ::dflash::eval::v1;

// Drafter m on `dataset`, every anchor, at most `max_samples` (0: all).
pb::EvalRequest JobRequest(const std::string& dataset, int max_samples = 0);

// Results equal apart from wall-clock timings and which process ran them
// (a shard's seconds and server, "host:pid").
void ExpectSameNumbers(pb::EvalResult got, pb::EvalResult want);

// The suite's data root: the tiny fixture and "big" (kBigSamples samples:
// seconds of real work). Each test starts its own servers on it.
class JobsE2eTest : public ::testing::Test {
 protected:
  static constexpr int kBigSamples = 900;  // 150 copies of the tiny dataset

  static void SetUpTestSuite();
  static void TearDownTestSuite();

  // A server with its state in dir_/`state` and `extra` flags; null (and a
  // test failure) when it does not start.
  static std::unique_ptr<ServerProcess> Start(const std::string& state,
                                              std::vector<std::string> extra = {});
  // Loads target t, datasets d, split and (when `big`) big, and drafter m.
  static void Load(const std::string& address, bool big = true);

  static TempDir* dir_;
  static std::string data_;
};

}  // namespace dflash::testing
