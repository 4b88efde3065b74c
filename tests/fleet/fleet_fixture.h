// File: fleet_fixture.h
// What the fleet's end-to-end tests share: a gRPC client of one server, one
// real PostgreSQL server for the suite (a database per test) and the tiny
// generated fixture, and fleet servers started on a database.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "dflash/eval/v1/service.grpc.pb.h"
#include "gtest/gtest.h"
#include "integration/job_client.h"
#include "test_util/postgres_server.h"
#include "test_util/process.h"
#include "test_util/temp_dir.h"

namespace dflash::testing {

namespace pb = ::dflash::eval::v1;

double Seconds(std::chrono::steady_clock::duration d);

// The suite's PostgreSQL server and data folder (the tiny fixture in
// data_), made once per suite.
class FleetTestBase : public ::testing::Test {
 protected:
  static void SetUpFleet();
  static void TearDownFleet();

  // A database of its own for each test.
  static std::string NewDatabase();

  // A fleet server named `name` on `url`, with `lease_seconds` and
  // heartbeat 0.5 s; `extra`: more server flags.
  static std::unique_ptr<ServerProcess> StartFleetServer(const std::string& url,
                                                         const std::string& name,
                                                         const std::string& lease_seconds,
                                                         const std::vector<std::string>& extra);

  static TempDir* dir_;
  static std::string data_;
  static PostgresServer* pg_;
};

}  // namespace dflash::testing
