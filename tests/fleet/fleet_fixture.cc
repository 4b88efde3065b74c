// File: fleet_fixture.cc
#include "fleet_fixture.h"

#include <stdlib.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "integration/tiny_fixture.h"

namespace dflash::testing {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

TempDir* FleetTestBase::dir_ = nullptr;
std::string FleetTestBase::data_;
PostgresServer* FleetTestBase::pg_ = nullptr;

void FleetTestBase::SetUpFleet() {
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  dir_ = new TempDir();
  data_ = dir_->Join("data");
  MakeTinyFixture(data_);
  ASSERT_FALSE(::testing::Test::HasFailure());
  auto pg = PostgresServer::Start();
  ASSERT_TRUE(pg.ok()) << pg.status();
  pg_ = pg->release();
}

void FleetTestBase::TearDownFleet() {
  delete pg_;
  delete dir_;
  pg_ = nullptr;
  dir_ = nullptr;
}

std::string FleetTestBase::NewDatabase() {
  static int n = 0;
  auto url = pg_->CreateDatabase(absl::StrCat("fleet", ++n));
  EXPECT_TRUE(url.ok()) << url.status();
  return url.ok() ? *url : "";
}

std::unique_ptr<ServerProcess> FleetTestBase::StartFleetServer(
    const std::string& url, const std::string& name, const std::string& lease_seconds,
    const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--data-root",
                                   data_,
                                   "--store",
                                   url,
                                   "--fleet-name",
                                   name,
                                   "--fleet-lease-seconds",
                                   lease_seconds,
                                   "--fleet-heartbeat-seconds",
                                   "0.5"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto server = ServerProcess::Start(dir_->Join("state-" + name), args);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  return std::move(server).value();
}

}  // namespace dflash::testing
