// File: fleet_e2e_fixture.h
// What the fleet's end-to-end tests of jobs and on-demand loads share
// (fleet_e2e_test.cc, fleet_on_demand_e2e_test.cc): a suite on
// FleetTestBase whose data root also holds "big" (seconds of work), fleet
// servers with t, d and big loaded, and the six kinds of job they submit.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dflash/eval/v1/service.grpc.pb.h"
#include "fleet/fleet_fixture.h"
#include "test_util/process.h"

namespace dflash::testing {

// Job kind k of six: the fleet's drafter by checkpoint path, so any server
// can run it; the dataset by the name every server loads.
pb::EvalRequest FleetRequest(const std::string& data, int k, const std::string& dataset = "d");

class FleetE2eTest : public FleetTestBase {
 protected:
  static constexpr int kBigSamples = 900;  // the tiny dataset 150 times over: seconds of work

  static void SetUpTestSuite();
  static void TearDownTestSuite() { TearDownFleet(); }

  // A fleet server named `name` on `url`, with t, d and big loaded. Every
  // server here runs with a 2 s lease, whatever `lease_seconds` says, as
  // these tests always have. `load` false: nothing resident; `extra`: more
  // server flags.
  static std::unique_ptr<ServerProcess> StartServer(const std::string& url, const std::string& name,
                                                    const std::string& lease_seconds = "10",
                                                    bool load = true,
                                                    std::vector<std::string> extra = {});

  // Loads t, d and big on the server at `address`.
  static void Load(const std::string& address);

  // Submits the 60 jobs (kind i % 6) round-robin to `servers`, waits for
  // all; returns the finished jobs and prints the wall time.
  static std::vector<pb::EvalJob> Run60(const std::vector<ServerProcess*>& servers,
                                        const char* label);
};

}  // namespace dflash::testing
