// File: pg_connection.h
// One libpq connection: parameterised statements (every value a text
// parameter, never spliced into SQL), results freed on scope exit, errors as
// absl::Status (unique violations are AlreadyExists, a lost connection is
// Unavailable and is re-opened on the next statement). Not thread-safe: the
// store serialises calls.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

struct pg_conn;
struct pg_result;

namespace dflash::store {

// The rows of one statement.
class PgRows {
 public:
  explicit PgRows(pg_result* result);
  int size() const;
  std::string Text(int row, int col) const;
  int64_t Int(int row, int col) const;  // 0 for NULL
  bool Bool(int row, int col) const;

 private:
  std::shared_ptr<pg_result> result_;
};

class PgConnection {
 public:
  // `url` is a postgresql:// URL or a libpq conninfo string; it must not
  // carry a password (InvalidArgument): that comes from `password` (a
  // file's contents) or libpq's PGPASSWORD / PGPASSFILE.
  static absl::StatusOr<std::unique_ptr<PgConnection>> Connect(const std::string& url,
                                                               const std::string& password);
  ~PgConnection();

  absl::StatusOr<PgRows> Exec(const std::string& sql, const std::vector<std::string>& params = {});
  // Several statements, no parameters (schema migrations).
  absl::Status ExecScript(const std::string& sql);
  // Runs `body` between BEGIN and COMMIT; ROLLBACK when it fails.
  template <typename Body>
  absl::Status InTransaction(Body&& body) {
    if (auto begun = Exec("BEGIN"); !begun.ok()) return begun.status();
    absl::Status status = body();
    if (!status.ok()) {
      Exec("ROLLBACK").IgnoreError();
      return status;
    }
    return Exec("COMMIT").status();
  }
  // "host:port/db" for messages (never a password).
  const std::string& where() const { return where_; }

 private:
  PgConnection(pg_conn* conn, std::string where) : conn_(conn), where_(std::move(where)) {}
  absl::StatusOr<PgRows> Check(pg_result* result, const std::string& sql);
  pg_conn* conn_;
  std::string where_;
};

}  // namespace dflash::store
