// One libpq connection (store/pg_connection.h) against a real PostgreSQL
// (test_util/postgres_server.h), a fresh database per test: URLs refused
// before any connection (a password in it, not a URL), an unreachable
// server, values passed as parameters and never spliced, the rows' readers,
// each failure's code and message (a unique violation, a bad statement
// named by its first line), transactions, and a connection the server
// dropped: Unavailable once, then re-opened.
#include "store/pg_connection.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/postgres_fixture.h"
#include "test_util/status_matchers.h"

namespace dflash::store {
namespace {

using ::dflash::testing::IsOk;
using ::dflash::testing::StatusIs;
using ::testing::Eq;
using ::testing::StartsWith;

class PgConnectionTest : public ::dflash::testing::PostgresTest {
 protected:
  void SetUp() override {
    PostgresTest::SetUp();
    if (HasFatalFailure()) return;
    auto conn = PgConnection::Connect(url_, "");
    ASSERT_TRUE(conn.ok()) << conn.status();
    conn_ = std::move(conn).value();
    where_ = absl::StrCat("127.0.0.1:", pg_->port(), "/", db_);
    ASSERT_THAT(conn_->ExecScript("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n BIGINT, "
                                  "ok BOOLEAN)"),
                IsOk());
  }

  std::string where_;
  std::unique_ptr<PgConnection> conn_;
};

TEST_F(PgConnectionTest, WhereNamesHostPortAndDatabaseOnly) {
  EXPECT_EQ(conn_->where(), where_);
  // A password given beside the URL is used, never shown (the test
  // server trusts every local connection, so any password works).
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgConnection> with_password,
                       PgConnection::Connect(url_, "s3cret"));
  EXPECT_EQ(with_password->where(), where_);
  // A conninfo string is as good as a URL.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PgConnection> conninfo,
                       PgConnection::Connect(absl::StrCat("host=127.0.0.1 port=", pg_->port(),
                                                          " dbname=", db_, " user=postgres"),
                                             ""));
  EXPECT_EQ(conninfo->where(), where_);
}

TEST_F(PgConnectionTest, APasswordInTheUrlIsRefusedBeforeConnecting) {
  const std::string why =
      "--store: the PostgreSQL URL carries a password; command lines are visible to every user "
      "(ps) and end up in logs. Put it in a file and pass --store-password-file FILE, or use "
      "PGPASSWORD or a PGPASSFILE (~/.pgpass)";
  // Port 1: nothing listens there, so only the check can answer.
  EXPECT_THAT(PgConnection::Connect("postgresql://postgres:secret@127.0.0.1:1/x", ""),
              StatusIs(absl::StatusCode::kInvalidArgument, Eq(why)));
  EXPECT_THAT(PgConnection::Connect("host=127.0.0.1 port=1 password=secret", ""),
              StatusIs(absl::StatusCode::kInvalidArgument, Eq(why)));
  EXPECT_THAT(PgConnection::Connect("postgresql://postgres@127.0.0.1:1/x?password=secret", ""),
              StatusIs(absl::StatusCode::kInvalidArgument, Eq(why)));
}

TEST_F(PgConnectionTest, NotAUrlIsInvalidArgumentWithLibpqsReason) {
  EXPECT_THAT(PgConnection::Connect("host=127.0.0.1 nonsense", ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("--store: not a PostgreSQL URL or conninfo: missing \"=\" after "
                          "\"nonsense\" in connection info string")));
  EXPECT_THAT(PgConnection::Connect("postgresql://127.0.0.1:1/x?colour=red", ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("--store: not a PostgreSQL URL or conninfo: invalid URI query "
                          "parameter: \"colour\"")));
}

TEST_F(PgConnectionTest, AnUnreachableServerIsUnavailableNamingWhere) {
  EXPECT_THAT(PgConnection::Connect("postgresql://postgres@127.0.0.1:1/x", ""),
              StatusIs(absl::StatusCode::kUnavailable,
                       StartsWith("cannot connect to PostgreSQL at 127.0.0.1:1/x: ")));
  EXPECT_THAT(PgConnection::Connect(pg_->Url("no_such_db"), ""),
              StatusIs(absl::StatusCode::kUnavailable,
                       Eq(absl::StrCat("cannot connect to PostgreSQL at 127.0.0.1:", pg_->port(),
                                       "/no_such_db: connection to server at \"127.0.0.1\", port ",
                                       pg_->port(),
                                       " failed: FATAL:  database \"no_such_db\" does not "
                                       "exist"))));
}

TEST_F(PgConnectionTest, ValuesAreParametersNeverSplicedIntoTheSql) {
  const std::string hostile = "O'Brien'); DROP TABLE t; --";
  ASSERT_THAT(conn_->Exec("INSERT INTO t VALUES ($1::int, $2, $3::bigint, $4::boolean)",
                          {"1", hostile, "9000000000", "true"}),
              IsOk());
  ASSERT_OK_AND_ASSIGN(PgRows rows,
                       conn_->Exec("SELECT name, n, ok FROM t WHERE name = $1", {hostile}));
  ASSERT_EQ(rows.size(), 1);
  EXPECT_EQ(rows.Text(0, 0), hostile);
  EXPECT_EQ(rows.Int(0, 1), 9000000000);
  EXPECT_TRUE(rows.Bool(0, 2));
  EXPECT_EQ(Sql("SELECT count(*) FROM t"), "1");  // the table is still there
}

TEST_F(PgConnectionTest, RowsReadNullAsEmptyZeroAndFalse) {
  ASSERT_OK_AND_ASSIGN(PgRows rows, conn_->Exec("SELECT NULL::text, NULL::bigint, NULL::boolean, "
                                                "'abc', false, -42, ''"));
  ASSERT_EQ(rows.size(), 1);
  EXPECT_EQ(rows.Text(0, 0), "");
  EXPECT_EQ(rows.Int(0, 1), 0);
  EXPECT_FALSE(rows.Bool(0, 2));
  EXPECT_EQ(rows.Int(0, 3), 0);  // not a number
  EXPECT_FALSE(rows.Bool(0, 4));
  EXPECT_EQ(rows.Int(0, 5), -42);
  EXPECT_EQ(rows.Text(0, 6), "");
  ASSERT_OK_AND_ASSIGN(PgRows none, conn_->Exec("SELECT id FROM t"));
  EXPECT_EQ(none.size(), 0);
  PgRows copy = none;  // rows share the result; each copy reads it
  EXPECT_EQ(copy.size(), 0);
}

TEST_F(PgConnectionTest, AUniqueViolationIsAlreadyExists) {
  ASSERT_THAT(conn_->Exec("INSERT INTO t (id) VALUES (7)"), IsOk());
  EXPECT_THAT(conn_->Exec("INSERT INTO t (id) VALUES ($1::int)", {"7"}),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       Eq(absl::StrCat("results store (", where_,
                                       "): ERROR:  duplicate key value violates unique constraint "
                                       "\"t_pkey\"\nDETAIL:  Key (id)=(7) already exists."))));
}

TEST_F(PgConnectionTest, ABadStatementIsInternalNamingItsFirstLine) {
  EXPECT_THAT(conn_->Exec("\n   SELECT nope\n  FROM t WHERE id = 1"),
              StatusIs(absl::StatusCode::kInternal,
                       Eq(absl::StrCat("results store (", where_,
                                       "): 'SELECT nope': ERROR:  column \"nope\" does not exist\n"
                                       "LINE 2:    SELECT nope\n"
                                       "                  ^\n"
                                       "HINT:  Perhaps you meant to reference the column "
                                       "\"t.name\"."))));
  EXPECT_THAT(conn_->Exec("SELECT $1::int", {"x"}),
              StatusIs(absl::StatusCode::kInternal,
                       Eq(absl::StrCat("results store (", where_,
                                       "): 'SELECT $1::int': ERROR:  invalid input syntax for "
                                       "type integer: \"x\"\n"
                                       "CONTEXT:  unnamed portal parameter $1 = '...'"))));
  EXPECT_THAT(conn_->ExecScript("CREATE TABLE u (a INT); SELEC 1"),
              StatusIs(absl::StatusCode::kInternal,
                       StartsWith(absl::StrCat("results store (", where_,
                                               "): 'CREATE TABLE u (a INT); SELEC 1': ERROR:  "
                                               "syntax error at or near \"SELEC\""))));
  // The script ran as one transaction: the table before the error is gone.
  EXPECT_EQ(Sql("SELECT count(*) FROM pg_tables WHERE tablename = 'u'"), "0");
}

TEST_F(PgConnectionTest, ExecScriptRunsSeveralStatements) {
  ASSERT_THAT(conn_->ExecScript("INSERT INTO t (id) VALUES (1);\nINSERT INTO t (id) VALUES (2);\n"
                                "UPDATE t SET name = 'x' WHERE id = 2;"),
              IsOk());
  EXPECT_EQ(Sql("SELECT string_agg(id || ':' || coalesce(name, '-'), ',' ORDER BY id) FROM t"),
            "1:-,2:x");
}

TEST_F(PgConnectionTest, InTransactionCommitsOrRollsBack) {
  EXPECT_THAT(
      conn_->InTransaction([&] { return conn_->Exec("INSERT INTO t (id) VALUES (1)").status(); }),
      IsOk());
  const absl::Status failed = conn_->InTransaction([&]() -> absl::Status {
    if (auto s = conn_->Exec("INSERT INTO t (id) VALUES (2)"); !s.ok()) return s.status();
    return absl::AbortedError("changed my mind");
  });
  EXPECT_THAT(failed, StatusIs(absl::StatusCode::kAborted, Eq("changed my mind")));
  // A failing statement inside rolls back what came before it too.
  EXPECT_THAT(conn_->InTransaction([&]() -> absl::Status {
    if (auto s = conn_->Exec("INSERT INTO t (id) VALUES (3)"); !s.ok()) return s.status();
    return conn_->Exec("INSERT INTO t (id) VALUES (1)").status();
  }),
              StatusIs(absl::StatusCode::kAlreadyExists, ::testing::_));
  EXPECT_EQ(Sql("SELECT string_agg(id::text, ',') FROM t"), "1");
  // The connection is usable after each (no transaction left open).
  EXPECT_THAT(conn_->Exec("INSERT INTO t (id) VALUES (4)"), IsOk());
  EXPECT_EQ(Sql("SELECT count(*) FROM t"), "2");
}

TEST_F(PgConnectionTest, ALostConnectionIsUnavailableThenReopened) {
  ASSERT_OK_AND_ASSIGN(PgRows pid, conn_->Exec("SELECT pg_backend_pid()"));
  ASSERT_THAT(pg_->Sql(db_, absl::StrCat("SELECT pg_terminate_backend(", pid.Text(0, 0), ")")),
              ::dflash::testing::IsOkAndHolds("t"));
  EXPECT_THAT(conn_->Exec("SELECT 1"),
              StatusIs(absl::StatusCode::kUnavailable,
                       StartsWith(absl::StrCat("results store: lost the connection to PostgreSQL "
                                               "at ",
                                               where_, ": "))));
  ASSERT_OK_AND_ASSIGN(PgRows again, conn_->Exec("SELECT 1 + $1::int", {"1"}));
  EXPECT_EQ(again.Int(0, 0), 2);
  ASSERT_OK_AND_ASSIGN(PgRows new_pid, conn_->Exec("SELECT pg_backend_pid()"));
  EXPECT_NE(new_pid.Text(0, 0), pid.Text(0, 0));
  // ExecScript re-opens it too.
  ASSERT_THAT(pg_->Sql(db_, absl::StrCat("SELECT pg_terminate_backend(", new_pid.Text(0, 0), ")")),
              ::dflash::testing::IsOkAndHolds("t"));
  EXPECT_THAT(conn_->ExecScript("SELECT 1"),
              StatusIs(absl::StatusCode::kUnavailable, ::testing::_));
  EXPECT_THAT(conn_->ExecScript("SELECT 1; SELECT 2"), IsOk());
}

}  // namespace
}  // namespace dflash::store
