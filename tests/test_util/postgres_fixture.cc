#include "test_util/postgres_fixture.h"

#include "absl/strings/str_cat.h"

namespace dflash::testing {

PostgresServer* PostgresTest::pg_ = nullptr;

void PostgresTest::SetUpTestSuite() {
  auto pg = PostgresServer::Start();
  ASSERT_TRUE(pg.ok()) << pg.status();
  pg_ = pg->release();
}

void PostgresTest::TearDownTestSuite() {
  delete pg_;
  pg_ = nullptr;
}

void PostgresTest::SetUp() {
  ASSERT_NE(pg_, nullptr) << "the suite's PostgreSQL did not start";
  static int n = 0;
  db_ = absl::StrCat("t", ++n);
  auto url = pg_->CreateDatabase(db_);
  ASSERT_TRUE(url.ok()) << url.status();
  url_ = *url;
}

std::string PostgresTest::Sql(const std::string& sql) {
  return pg_->Sql(db_, sql).value_or("(failed)");
}

}  // namespace dflash::testing
