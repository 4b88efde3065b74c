// File: sqlite_result_store.h
// ResultStore in one SQLite file (STATE_DIR/results.sqlite3): WAL journal,
// one transaction per Put, synchronous=FULL for the commit of a SUCCEEDED
// record (NORMAL otherwise: a process crash loses nothing committed, a power
// cut may lose the last non-final updates). Columns hold what List filters
// and sorts on; the full record is one JSON column (record_json.h). The
// schema's version lives in the schema_version table. Thread-safe: one
// connection behind a mutex; other processes wait on SQLite's busy timeout.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "store/result_store.h"

struct sqlite3;

namespace dflash::store {

class SqliteResultStore final : public ResultStore {
 public:
  static constexpr int kSchemaVersion = 1;

  // Creates the file and schema when absent. FailedPrecondition when the file
  // is not a results store or has a newer schema than this server knows.
  static absl::StatusOr<std::unique_ptr<SqliteResultStore>> Open(const std::string& path);
  ~SqliteResultStore() override;  // closes the database cleanly

  absl::Status Put(const types::JobRecord& record) override;
  absl::StatusOr<types::JobRecord> Get(const std::string& id) override;
  absl::StatusOr<types::JobPage> List(const types::ListQuery& query) override;
  absl::StatusOr<std::vector<std::string>> MarkInterruptedOnStartup(
      int64_t now_unix_micros) override;
  absl::StatusOr<std::string> MaxId() override;

  const std::string& path() const { return path_; }

 private:
  SqliteResultStore(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  absl::Status InitSchema();
  absl::Status PutLocked(const types::JobRecord& record);

  std::string path_;
  std::mutex mu_;  // guards db_ (one statement at a time)
  sqlite3* db_;
};

}  // namespace dflash::store
