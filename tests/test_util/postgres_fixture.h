// File: postgres_fixture.h
// A gtest fixture for tests against a real PostgreSQL (postgres_server.h):
// one server for each test suite, a fresh database for each test.
//
//   class StoreTest : public dflash::testing::PostgresTest {};
//   TEST_F(StoreTest, X) { auto store = PostgresResultStore::Open(url_, ""); ... }
#pragma once

#include <string>

#include "gtest/gtest.h"
#include "test_util/postgres_server.h"

namespace dflash::testing {

class PostgresTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();     // starts pg_
  static void TearDownTestSuite();  // stops it
  void SetUp() override;            // creates db_ (url_)

  // psql on this test's database (unaligned, tuples only); "(failed)" when
  // the statement fails.
  std::string Sql(const std::string& sql);

  static PostgresServer* pg_;
  std::string db_, url_;
};

}  // namespace dflash::testing
