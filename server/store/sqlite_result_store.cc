#include "store/sqlite_result_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "store/lean_record.h"
#include "store/page_token.h"
#include "store/record_json.h"

namespace dflash::store {
namespace {

using Value = std::variant<int64_t, std::string>;

// A prepared statement, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr);
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  absl::Status status(absl::string_view what) const {
    if (rc_ == SQLITE_OK) return absl::OkStatus();
    return absl::InternalError(
        absl::StrCat("results store: preparing ", what, ": ", sqlite3_errmsg(db_)));
  }
  void Bind(const std::vector<Value>& values) {
    for (size_t i = 0; i < values.size(); ++i) {
      const int pos = static_cast<int>(i) + 1;
      if (const int64_t* v = std::get_if<int64_t>(&values[i])) {
        sqlite3_bind_int64(stmt_, pos, *v);
      } else {
        const std::string& s = std::get<std::string>(values[i]);
        sqlite3_bind_text(stmt_, pos, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
      }
    }
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return sqlite3_step(stmt_); }
  std::string Text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? std::string(reinterpret_cast<const char*>(t),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
};

absl::Status Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string message = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    return absl::InternalError(absl::StrCat("results store: '", sql, "': ", message));
  }
  return absl::OkStatus();
}

// Runs `stmt` to completion (no rows expected).
absl::Status Run(sqlite3* db, Stmt& stmt, absl::string_view what) {
  const int rc = stmt.Step();
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
    return absl::InternalError(absl::StrCat("results store: ", what, ": ", sqlite3_errmsg(db)));
  }
  return absl::OkStatus();
}

constexpr char kSchema[] = R"sql(
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  create_micros INTEGER NOT NULL,
  run TEXT NOT NULL,
  step INTEGER NOT NULL,
  drafter TEXT NOT NULL,
  checkpoint_path TEXT NOT NULL,
  dataset TEXT NOT NULL,
  drafter_fingerprint TEXT NOT NULL,
  dataset_fingerprint TEXT NOT NULL,
  record TEXT NOT NULL
);
CREATE INDEX jobs_by_create ON jobs(create_micros, id);
CREATE INDEX jobs_by_run_step ON jobs(run, step, id);
CREATE INDEX jobs_by_state ON jobs(state);
CREATE TABLE job_labels (
  job_id TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (job_id, key)
);
CREATE INDEX job_labels_by_pair ON job_labels(key, value);
)sql";

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteResultStore>> SqliteResultStore::Open(
    const std::string& path) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open results store '", path, "': ", message));
  }
  std::unique_ptr<SqliteResultStore> store(new SqliteResultStore(path, db));
  sqlite3_busy_timeout(db, 10000);
  RETURN_IF_ERROR(store->InitSchema(), "opening results store '", path, "'");
  return store;
}

SqliteResultStore::~SqliteResultStore() {
  std::lock_guard<std::mutex> lock(mu_);
  sqlite3_close_v2(db_);
}

absl::Status SqliteResultStore::InitSchema() {
  std::lock_guard<std::mutex> lock(mu_);
  // A file that is not a database fails on its first read, here.
  {
    Stmt wal(db_, "PRAGMA journal_mode=WAL");
    if (!wal.status("journal mode").ok() || wal.Step() != SQLITE_ROW) {
      return absl::FailedPreconditionError(
          absl::StrCat("not an SQLite database: ", sqlite3_errmsg(db_)));
    }
    if (wal.Text(0) != "wal") {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot switch to WAL journal mode (got '", wal.Text(0), "')"));
    }
  }
  RETURN_IF_ERROR(Exec(db_, "PRAGMA synchronous=NORMAL"));
  RETURN_IF_ERROR(Exec(db_, "BEGIN IMMEDIATE"));
  absl::Status status = [&]() -> absl::Status {
    RETURN_IF_ERROR(
        Exec(db_, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"));
    Stmt get(db_, "SELECT version FROM schema_version");
    RETURN_IF_ERROR(get.status("schema version"));
    if (get.Step() == SQLITE_ROW) {
      const int64_t version = get.Int(0);
      if (version > kSchemaVersion) {
        return absl::FailedPreconditionError(
            absl::StrCat("schema version ", version, " is newer than this server's (",
                         kSchemaVersion, "); use a newer dflash-evald or another --state-dir"));
      }
      // Migrations from older versions go here; version 1 is the first.
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(Exec(db_, kSchema));
    return Exec(db_, absl::StrCat("INSERT INTO schema_version VALUES (", kSchemaVersion, ")"));
  }();
  if (!status.ok()) {
    Exec(db_, "ROLLBACK").IgnoreError();
    return status;
  }
  return Exec(db_, "COMMIT");
}

absl::Status SqliteResultStore::PutLocked(const types::JobRecord& r) {
  Stmt put(db_,
           "INSERT OR REPLACE INTO jobs (id, state, create_micros, run, step, drafter, "
           "checkpoint_path, dataset, drafter_fingerprint, dataset_fingerprint, record) "
           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  RETURN_IF_ERROR(put.status("insert"));
  put.Bind({r.id, std::string(types::JobStateName(r.state)), r.create_unix_micros, r.request.run,
            r.request.step, r.request.params.drafter, r.request.params.checkpoint_path,
            r.request.params.dataset, r.drafter_fingerprint, r.dataset_fingerprint,
            RecordToJson(r)});
  RETURN_IF_ERROR(Run(db_, put, "writing job"));
  Stmt clear(db_, "DELETE FROM job_labels WHERE job_id = ?");
  RETURN_IF_ERROR(clear.status("labels"));
  clear.Bind({r.id});
  RETURN_IF_ERROR(Run(db_, clear, "clearing labels"));
  for (const auto& [key, value] : r.request.labels) {
    Stmt label(db_, "INSERT INTO job_labels (job_id, key, value) VALUES (?, ?, ?)");
    RETURN_IF_ERROR(label.status("labels"));
    label.Bind({r.id, key, value});
    RETURN_IF_ERROR(Run(db_, label, "writing labels"));
  }
  return absl::OkStatus();
}

absl::Status SqliteResultStore::Put(const types::JobRecord& record) {
  if (record.id.empty()) return absl::InvalidArgumentError("job record has no id");
  std::lock_guard<std::mutex> lock(mu_);
  // A final result is fsync'ed with its commit; progress updates need not be.
  RETURN_IF_ERROR(Exec(db_, record.state == types::JobState::kSucceeded
                                ? "PRAGMA synchronous=FULL"
                                : "PRAGMA synchronous=NORMAL"));
  RETURN_IF_ERROR(Exec(db_, "BEGIN IMMEDIATE"));
  absl::Status status = PutLocked(record);
  if (!status.ok()) {
    Exec(db_, "ROLLBACK").IgnoreError();
    return status;
  }
  return Exec(db_, "COMMIT");
}

absl::StatusOr<types::JobRecord> SqliteResultStore::Get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt get(db_, "SELECT record FROM jobs WHERE id = ?");
  RETURN_IF_ERROR(get.status("get"));
  get.Bind({id});
  const int rc = get.Step();
  if (rc == SQLITE_DONE) return absl::NotFoundError(absl::StrCat("no job with id '", id, "'"));
  if (rc != SQLITE_ROW) {
    return absl::InternalError(
        absl::StrCat("results store: reading job '", id, "': ", sqlite3_errmsg(db_)));
  }
  return RecordFromJson(get.Text(0));
}

absl::StatusOr<types::JobPage> SqliteResultStore::List(const types::ListQuery& q) {
  std::vector<std::string> where;
  std::vector<Value> args;
  if (q.state) {
    where.push_back("state = ?");
    args.push_back(std::string(types::JobStateName(*q.state)));
  }
  if (!q.drafter.empty()) {
    where.push_back("(drafter = ? OR checkpoint_path = ? OR drafter_fingerprint = ?)");
    args.insert(args.end(), {q.drafter, q.drafter, q.drafter});
  }
  if (!q.dataset.empty()) {
    where.push_back("(dataset = ? OR dataset_fingerprint = ?)");
    args.insert(args.end(), {q.dataset, q.dataset});
  }
  if (!q.run.empty()) {
    where.push_back("run = ?");
    args.push_back(q.run);
  }
  if (!q.suite.empty()) {  // no column: suites are rare; the record holds the name
    where.push_back("json_extract(record, '$.request.suite') = ?");
    args.push_back(q.suite);
  }
  if (q.min_step) {
    where.push_back("step >= ?");
    args.push_back(*q.min_step);
  }
  if (q.max_step) {
    where.push_back("step <= ?");
    args.push_back(*q.max_step);
  }
  for (const auto& [key, value] : q.labels) {
    where.push_back(
        "EXISTS (SELECT 1 FROM job_labels l WHERE l.job_id = jobs.id AND l.key = ? AND "
        "l.value = ?)");
    args.insert(args.end(), {key, value});
  }
  if (!q.page_token.empty()) {
    int64_t key = 0;
    std::string id;
    RETURN_IF_ERROR(ParsePageToken(q.page_token, q.order_by_step, &key, &id));
    where.push_back(q.order_by_step ? "(step > ? OR (step = ? AND id > ?))"
                                    : "(create_micros < ? OR (create_micros = ? AND id < ?))");
    args.insert(args.end(), {key, key, id});
  }
  const int page_size = PageSize(q.page_size);
  const std::string sql = ListSql(where, q.order_by_step, page_size);

  std::lock_guard<std::mutex> lock(mu_);
  Stmt list(db_, sql);
  RETURN_IF_ERROR(list.status("list"));
  list.Bind(args);
  types::JobPage page;
  int64_t last_key = 0;
  std::string last_id;
  int rc;
  while ((rc = list.Step()) == SQLITE_ROW) {
    if (static_cast<int>(page.jobs.size()) == page_size) {
      page.next_page_token = MakePageToken(q.order_by_step, last_key, last_id);
      break;
    }
    ASSIGN_OR_RETURN(
        types::JobRecord record,
        RecordFromJson(q.without_per_sample ? WithoutPerSample(list.Text(0)) : list.Text(0)));
    page.jobs.push_back(std::move(record));
    last_key = q.order_by_step ? list.Int(1) : list.Int(2);
    last_id = list.Text(3);
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    return absl::InternalError(absl::StrCat("results store: listing jobs: ", sqlite3_errmsg(db_)));
  }
  return page;
}

absl::StatusOr<std::vector<std::string>> SqliteResultStore::MarkInterruptedOnStartup(
    int64_t now_unix_micros) {
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(Exec(db_, "PRAGMA synchronous=FULL"));
  RETURN_IF_ERROR(Exec(db_, "BEGIN IMMEDIATE"));
  std::vector<std::string> ids;
  absl::Status status = [&]() -> absl::Status {
    std::vector<types::JobRecord> records;
    {
      Stmt find(db_, "SELECT record FROM jobs WHERE state IN ('QUEUED', 'RUNNING') ORDER BY id");
      RETURN_IF_ERROR(find.status("interrupted"));
      int rc;
      while ((rc = find.Step()) == SQLITE_ROW) {
        ASSIGN_OR_RETURN(types::JobRecord r, RecordFromJson(find.Text(0)));
        records.push_back(std::move(r));
      }
      if (rc != SQLITE_DONE) {
        return absl::InternalError(
            absl::StrCat("results store: finding unfinished jobs: ", sqlite3_errmsg(db_)));
      }
    }
    for (types::JobRecord& r : records) {
      r.error_message = absl::StrCat("the server stopped while this job was ",
                                     types::JobStateName(r.state), "; resubmit it");
      r.state = types::JobState::kInterrupted;
      r.interrupted_by_restart = true;
      r.end_unix_micros = now_unix_micros;
      RETURN_IF_ERROR(PutLocked(r));
      ids.push_back(r.id);
    }
    return absl::OkStatus();
  }();
  if (!status.ok()) {
    Exec(db_, "ROLLBACK").IgnoreError();
    return status;
  }
  RETURN_IF_ERROR(Exec(db_, "COMMIT"));
  return ids;
}

absl::StatusOr<std::string> SqliteResultStore::MaxId() {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt max(db_, "SELECT MAX(id) FROM jobs");
  RETURN_IF_ERROR(max.status("max id"));
  if (max.Step() != SQLITE_ROW) {
    return absl::InternalError(absl::StrCat("results store: max id: ", sqlite3_errmsg(db_)));
  }
  return max.Text(0);
}

}  // namespace dflash::store
