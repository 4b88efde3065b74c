#include "fleet/fleet_e2e_fixture.h"

#include <chrono>
#include <iostream>
#include <tuple>

#include "integration/tiny_fixture.h"

namespace dflash::testing {

using Clock = std::chrono::steady_clock;

pb::EvalRequest FleetRequest(const std::string& data, int k, const std::string& dataset) {
  pb::EvalRequest r;
  r.set_checkpoint_path(data + "/drafter");
  r.set_dataset(dataset);
  r.set_anchors(pb::ANCHOR_STRATEGY_ALL);
  r.set_max_samples(k == 0 ? 0 : k);
  r.set_run("fleet");
  r.set_step(k);
  return r;
}

void FleetE2eTest::SetUpTestSuite() {
  SetUpFleet();
  ASSERT_FALSE(::testing::Test::HasFailure());
  MakeLongDataset(data_, data_ + "/big", kBigSamples);
}

std::unique_ptr<ServerProcess> FleetE2eTest::StartServer(const std::string& url,
                                                         const std::string& name,
                                                         const std::string& lease_seconds,
                                                         bool load,
                                                         std::vector<std::string> extra) {
  (void)lease_seconds;
  auto server = StartFleetServer(url, name, "2", extra);
  if (server != nullptr && load) Load(server->address());
  return server;
}

void FleetE2eTest::Load(const std::string& address) {
  for (auto [what, name, path] :
       {std::tuple<std::string, std::string, std::string>{"load-target", "t", "/target"},
        {"load-dataset", "d", "/dataset"},
        {"load-dataset", "big", "/big"}}) {
    CommandResult r = RunCli(address, {what, data_ + path, "--name", name});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
}

std::vector<pb::EvalJob> FleetE2eTest::Run60(const std::vector<ServerProcess*>& servers,
                                             const char* label) {
  std::vector<std::unique_ptr<JobClient>> clients;
  for (ServerProcess* s : servers) clients.push_back(std::make_unique<JobClient>(s->address()));
  const Clock::time_point t0 = Clock::now();
  std::vector<std::string> ids;
  for (int i = 0; i < 60; ++i) {
    ids.push_back(clients[i % clients.size()]->Submit(FleetRequest(data_, i % 6)).id());
  }
  std::vector<pb::EvalJob> done;
  for (size_t i = 0; i < ids.size(); ++i) {
    done.push_back(clients[(i + 1) % clients.size()]->WaitDone(ids[i], 300));
  }
  std::cout << "[measure] " << label << ": 60 jobs in " << Seconds(Clock::now() - t0) << " s wall ("
            << 1000 * Seconds(Clock::now() - t0) / 60 << " ms per job)\n";
  return done;
}

}  // namespace dflash::testing
