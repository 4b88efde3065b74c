// File: postgres_result_store.h
// ResultStore in a PostgreSQL database shared by a fleet of servers
// (--store postgresql://...). Columns hold what List filters and sorts on and
// what the queue claims by (owner, attempt, lease, cancel flag, the resident
// names a job needs); the full record is one JSON column (record_json.h), so
// new record fields need no schema change. Commits are synchronous (the
// server's default), so a SUCCEEDED record is durable when Put returns.
// Leases use the database's clock, so servers' clocks need not agree. The
// schema's version lives in schema_version; Open migrates an older schema
// under an advisory lock and refuses a newer one. Thread-safe: one
// connection behind a mutex.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "store/pg_connection.h"
#include "store/result_store.h"

namespace dflash::store {

class PostgresResultStore final : public ResultStore {
 public:
  static constexpr int kSchemaVersion = 2;

  // `password`: the contents of --store-password-file, or "" for libpq's
  // PGPASSWORD / PGPASSFILE. Unavailable when the database cannot be
  // reached, FailedPrecondition when its schema is newer than ours.
  static absl::StatusOr<std::unique_ptr<PostgresResultStore>> Open(const std::string& url,
                                                                   const std::string& password);

  absl::Status Put(const types::JobRecord& record) override;
  absl::StatusOr<types::JobRecord> Get(const std::string& id) override;
  absl::StatusOr<types::JobPage> List(const types::ListQuery& query) override;
  // Leases replace it: a dead server's jobs are taken over, not interrupted.
  absl::StatusOr<std::vector<std::string>> MarkInterruptedOnStartup(int64_t) override {
    return std::vector<std::string>{};
  }
  absl::StatusOr<std::string> MaxId() override;

  bool shared() const override { return true; }
  absl::Status Create(const types::JobRecord& record) override;
  absl::StatusOr<std::optional<types::JobRecord>> Claim(const ClaimRequest& c) override;
  absl::StatusOr<bool> PutLeased(const types::JobRecord& record, int64_t lease_micros) override;
  absl::StatusOr<types::JobRecord> RequestCancel(const std::string& id,
                                                 int64_t now_unix_micros) override;
  absl::Status Heartbeat(const std::string& server, const std::string& info_json) override;
  absl::StatusOr<std::vector<FleetServer>> LiveServers(int64_t max_age_micros) override;
  absl::Status Leave(const std::string& server) override;
  absl::StatusOr<int64_t> CountQueued() override;

  const std::string& where() const { return db_->where(); }

 private:
  explicit PostgresResultStore(std::unique_ptr<PgConnection> db) : db_(std::move(db)) {}
  absl::Status Migrate();
  absl::Status Write(const types::JobRecord& record, bool create);
  // Ends jobs whose lease expired too often or that were cancelled while
  // their server was gone (part of Claim's transaction).
  absl::Status EndAbandoned(int max_attempts);

  std::mutex mu_;  // guards db_ (one statement at a time)
  std::unique_ptr<PgConnection> db_;
};

}  // namespace dflash::store
