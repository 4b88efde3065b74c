#include "store/postgres_result_store.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "store/lean_record.h"
#include "store/page_token.h"
#include "store/record_json.h"

namespace dflash::store {
namespace {

// The datasets a server must hold to claim the job: a suite's, comma-joined
// (the claim matches them as a set), or the one dataset named.
std::string NeedDatasets(const types::JobRequest& r) {
  return r.suite_datasets.empty() ? r.params.dataset : absl::StrJoin(r.suite_datasets, ",");
}

using types::JobRecord;
using types::JobState;

// The database's clock in microseconds: leases never compare two hosts' clocks.
constexpr char kNow[] = "(extract(epoch from clock_timestamp()) * 1000000)::bigint";
// Serialises migrations of concurrently starting servers.
constexpr char kMigrationLock[] = "SELECT pg_advisory_xact_lock(4242016)";

// kMigrations[v - 1] takes the schema from version v - 1 to v.
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  create_micros BIGINT NOT NULL,
  run TEXT NOT NULL,
  step BIGINT NOT NULL,
  drafter TEXT NOT NULL,
  checkpoint_path TEXT NOT NULL,
  dataset TEXT NOT NULL,
  drafter_fingerprint TEXT NOT NULL,
  dataset_fingerprint TEXT NOT NULL,
  labels JSONB NOT NULL,
  need_target TEXT NOT NULL,
  need_dataset TEXT NOT NULL,
  need_drafter TEXT NOT NULL,
  owner TEXT NOT NULL DEFAULT '',
  attempt INTEGER NOT NULL DEFAULT 0,
  lease_until BIGINT NOT NULL DEFAULT 0,
  cancel_requested BOOLEAN NOT NULL DEFAULT false,
  record TEXT NOT NULL
);
CREATE INDEX jobs_by_create ON jobs (create_micros, id);
CREATE INDEX jobs_by_run_step ON jobs (run, step, id);
CREATE INDEX jobs_by_state ON jobs (state, create_micros);
CREATE TABLE servers (
  name TEXT PRIMARY KEY,
  info TEXT NOT NULL,
  heartbeat_micros BIGINT NOT NULL
);
)sql",
    // 2: jobs that name their dataset or target by path (any server loads them).
    R"sql(
ALTER TABLE jobs ADD COLUMN dataset_path TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN target_path TEXT NOT NULL DEFAULT '';
)sql",
};
static_assert(std::size(kMigrations) == PostgresResultStore::kSchemaVersion);

std::string Str(int64_t v) {
  return absl::StrCat(v);
}

std::string LabelsJson(const std::map<std::string, std::string>& labels) {
  return nlohmann::json(labels).dump();
}

std::string NamesJson(const std::vector<std::string>& names) {
  return nlohmann::json(names).dump();
}

// Closes the open attempt (if any) with `outcome` at `now`.
void CloseAttempt(JobRecord& r, const std::string& outcome, int64_t now) {
  if (!r.attempts.empty() && r.attempts.back().end_unix_micros == 0) {
    r.attempts.back().end_unix_micros = now;
    r.attempts.back().outcome = outcome;
  }
}

std::string AttemptsText(const JobRecord& r) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < r.attempts.size(); ++i) {
    parts.push_back(
        absl::StrCat("attempt ", i + 1, " on ", r.attempts[i].server, ": ", r.attempts[i].outcome));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostgresResultStore>> PostgresResultStore::Open(
    const std::string& url, const std::string& password) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgConnection> db, PgConnection::Connect(url, password));
  std::unique_ptr<PostgresResultStore> store(new PostgresResultStore(std::move(db)));
  RETURN_IF_ERROR(store->Migrate(), "opening the results store at ", store->where());
  return store;
}

absl::Status PostgresResultStore::Migrate() {
  std::lock_guard<std::mutex> lock(mu_);
  return db_->InTransaction([&]() -> absl::Status {
    RETURN_IF_ERROR(db_->Exec(kMigrationLock).status());
    RETURN_IF_ERROR(
        db_->Exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)").status());
    ASSIGN_OR_RETURN(PgRows rows,
                     db_->Exec("SELECT COALESCE(MAX(version), 0) FROM schema_version"));
    const int64_t version = rows.Int(0, 0);
    if (version > kSchemaVersion) {
      return absl::FailedPreconditionError(
          absl::StrCat("the database's schema is version ", version, ", newer than this server's (",
                       kSchemaVersion,
                       "): a newer dflash-evald has migrated it. Upgrade this server; it will "
                       "not write to a schema it does not know"));
    }
    for (int64_t v = version + 1; v <= kSchemaVersion; ++v) {
      RETURN_IF_ERROR(db_->ExecScript(kMigrations[v - 1]), "migrating to schema version ", v);
    }
    if (version == kSchemaVersion) return absl::OkStatus();
    RETURN_IF_ERROR(db_->Exec("DELETE FROM schema_version").status());
    return db_->Exec("INSERT INTO schema_version VALUES ($1)", {Str(kSchemaVersion)}).status();
  });
}

absl::Status PostgresResultStore::Write(const JobRecord& r, bool create) {
  const types::EvalParams& p = r.request.params;
  std::string sql =
      "INSERT INTO jobs (id, state, create_micros, run, step, drafter, checkpoint_path, dataset, "
      "drafter_fingerprint, dataset_fingerprint, labels, need_target, need_dataset, need_drafter, "
      "record, dataset_path, target_path) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, "
      "$11::jsonb, $12, $13, $14, $15, $16, $17)";
  if (!create) {
    absl::StrAppend(&sql,
                    " ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, "
                    "drafter_fingerprint = EXCLUDED.drafter_fingerprint, "
                    "dataset_fingerprint = EXCLUDED.dataset_fingerprint, record = EXCLUDED.record");
  }
  std::lock_guard<std::mutex> lock(mu_);
  return db_
      ->Exec(sql, {r.id, types::JobStateName(r.state), Str(r.create_unix_micros), r.request.run,
                   Str(r.request.step), p.drafter, p.checkpoint_path, p.dataset,
                   r.drafter_fingerprint, r.dataset_fingerprint, LabelsJson(r.request.labels),
                   p.target, NeedDatasets(r.request), p.drafter, RecordToJson(r),
                   r.request.dataset_path, r.request.target_path})
      .status();
}

absl::Status PostgresResultStore::Put(const JobRecord& record) {
  if (record.id.empty()) return absl::InvalidArgumentError("job record has no id");
  return Write(record, /*create=*/false);
}

absl::Status PostgresResultStore::Create(const JobRecord& record) {
  if (record.id.empty()) return absl::InvalidArgumentError("job record has no id");
  return Write(record, /*create=*/true);
}

absl::StatusOr<JobRecord> PostgresResultStore::Get(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(PgRows rows, db_->Exec("SELECT record FROM jobs WHERE id = $1", {id}));
  if (rows.size() == 0) return absl::NotFoundError(absl::StrCat("no job with id '", id, "'"));
  return RecordFromJson(rows.Text(0, 0));
}

absl::StatusOr<types::JobPage> PostgresResultStore::List(const types::ListQuery& q) {
  std::vector<std::string> where, args;
  auto arg = [&args](std::string v) {
    args.push_back(std::move(v));
    return absl::StrCat("$", args.size());
  };
  if (q.state) where.push_back(absl::StrCat("state = ", arg(types::JobStateName(*q.state))));
  if (!q.drafter.empty()) {
    const std::string d = arg(q.drafter);
    where.push_back(absl::StrCat("(drafter = ", d, " OR checkpoint_path = ", d,
                                 " OR drafter_fingerprint = ", d, ")"));
  }
  if (!q.dataset.empty()) {
    const std::string d = arg(q.dataset);
    where.push_back(absl::StrCat("(dataset = ", d, " OR dataset_fingerprint = ", d, ")"));
  }
  if (!q.run.empty()) where.push_back(absl::StrCat("run = ", arg(q.run)));
  if (!q.suite.empty()) {  // no column: suites are rare; the record holds the name
    where.push_back(absl::StrCat("(record::jsonb -> 'request' ->> 'suite') = ", arg(q.suite)));
  }
  if (q.min_step) where.push_back(absl::StrCat("step >= ", arg(Str(*q.min_step)), "::bigint"));
  if (q.max_step) where.push_back(absl::StrCat("step <= ", arg(Str(*q.max_step)), "::bigint"));
  if (!q.labels.empty()) {
    where.push_back(absl::StrCat("labels @> ", arg(LabelsJson(q.labels)), "::jsonb"));
  }
  if (!q.page_token.empty()) {
    int64_t key = 0;
    std::string id;
    RETURN_IF_ERROR(ParsePageToken(q.page_token, q.order_by_step, &key, &id));
    const std::string k = arg(Str(key)) + "::bigint", i = arg(id);
    where.push_back(q.order_by_step
                        ? absl::StrCat("(step > ", k, " OR (step = ", k, " AND id > ", i, "))")
                        : absl::StrCat("(create_micros < ", k, " OR (create_micros = ", k,
                                       " AND id < ", i, "))"));
  }
  const int page_size = PageSize(q.page_size);
  const std::string sql = ListSql(where, q.order_by_step, page_size);
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(PgRows rows, db_->Exec(sql, args));
  types::JobPage page;
  for (int i = 0; i < rows.size() && i < page_size; ++i) {
    ASSIGN_OR_RETURN(
        JobRecord record,
        RecordFromJson(q.without_per_sample ? WithoutPerSample(rows.Text(i, 0)) : rows.Text(i, 0)));
    page.jobs.push_back(std::move(record));
  }
  if (rows.size() > page_size) {
    const int last = page_size - 1;
    page.next_page_token =
        MakePageToken(q.order_by_step, q.order_by_step ? rows.Int(last, 1) : rows.Int(last, 2),
                      rows.Text(last, 3));
  }
  return page;
}

absl::StatusOr<std::string> PostgresResultStore::MaxId() {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(PgRows rows, db_->Exec("SELECT COALESCE(MAX(id), '') FROM jobs"));
  return rows.Text(0, 0);
}

absl::Status PostgresResultStore::EndAbandoned(int max_attempts) {
  ASSIGN_OR_RETURN(
      PgRows rows,
      db_->Exec(absl::StrCat("SELECT id, record, cancel_requested, ", kNow,
                             " FROM jobs WHERE (cancel_requested AND state = 'QUEUED') OR "
                             "(state = 'RUNNING' AND lease_until < ",
                             kNow,
                             " AND (cancel_requested OR attempt >= $1::int)) "
                             "FOR UPDATE SKIP LOCKED"),
                {Str(max_attempts)}));
  for (int i = 0; i < rows.size(); ++i) {
    ASSIGN_OR_RETURN(JobRecord r, RecordFromJson(rows.Text(i, 1)));
    const int64_t now = rows.Int(i, 3);
    CloseAttempt(r, "lease expired: the server stopped renewing it", now);
    r.end_unix_micros = now;
    r.progress.eta_seconds = 0;
    if (rows.Bool(i, 2)) {
      r.state = JobState::kCancelled;
      r.error_code = static_cast<int>(absl::StatusCode::kCancelled);
      r.error_message = "cancelled (its server stopped before the job ended)";
    } else {
      r.state = JobState::kFailed;
      r.error_code = static_cast<int>(absl::StatusCode::kUnavailable);
      r.error_message = absl::StrCat("ran ", r.attempts.size(),
                                     " times and lost its server each time: ", AttemptsText(r));
    }
    RETURN_IF_ERROR(db_->Exec("UPDATE jobs SET state = $2, record = $3, owner = '', "
                              "lease_until = 0 WHERE id = $1",
                              {r.id, types::JobStateName(r.state), RecordToJson(r)})
                        .status());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<JobRecord>> PostgresResultStore::Claim(const ClaimRequest& c) {
  std::optional<JobRecord> claimed;
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(db_->InTransaction([&]() -> absl::Status {
    RETURN_IF_ERROR(EndAbandoned(c.max_attempts));
    // Jobs that name resident objects run only on servers holding them; an
    // unnamed target means "the only one"; a path any server can load.
    // Affinity: first the jobs with the fewest objects to load here.
    ASSIGN_OR_RETURN(
        PgRows rows,
        db_->Exec(absl::StrCat("SELECT id, record, ", kNow,
                               " FROM jobs WHERE NOT cancel_requested AND (state = 'QUEUED' OR "
                               "(state = 'RUNNING' AND lease_until < ",
                               kNow,
                               " AND attempt < $5::int)) "
                               "AND (dataset_path <> '' OR string_to_array(need_dataset, ',') <@ "
                               "    ARRAY(SELECT jsonb_array_elements_text($1::jsonb))) "
                               "AND (target_path <> '' OR need_target IN "
                               "     (SELECT jsonb_array_elements_text($2::jsonb)) "
                               "     OR (need_target = '' AND $3::int = 1)) "
                               "AND (need_drafter = '' OR need_drafter IN "
                               "     (SELECT jsonb_array_elements_text($4::jsonb))) "
                               "AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements("
                               "     record::jsonb -> 'attempts') a WHERE a ->> 0 = $8 "
                               "     AND a ->> 3 LIKE 'refused: %') "
                               "AND left(id, length($9)) = $9 "
                               "ORDER BY (dataset_path <> '' AND dataset_path NOT IN "
                               "     (SELECT jsonb_array_elements_text($6::jsonb)))::int + "
                               "  (target_path <> '' AND target_path NOT IN "
                               "     (SELECT jsonb_array_elements_text($7::jsonb)))::int, "
                               "(need_drafter <> '') DESC, create_micros, id "
                               "LIMIT 1 FOR UPDATE SKIP LOCKED"),
                  {NamesJson(c.datasets), NamesJson(c.targets), Str(c.targets.size()),
                   NamesJson(c.drafters), Str(c.max_attempts), NamesJson(c.dataset_paths),
                   NamesJson(c.target_paths), c.server, c.id_prefix}));
    if (rows.size() == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(JobRecord r, RecordFromJson(rows.Text(0, 1)));
    const int64_t now = rows.Int(0, 2);
    CloseAttempt(r, "lease expired: the server stopped renewing it", now);
    r.attempts.push_back({c.server, now, 0, ""});
    r.state = JobState::kRunning;
    r.server = c.server;
    r.start_unix_micros = now;
    r.progress = {};
    RETURN_IF_ERROR(
        db_->Exec(absl::StrCat("UPDATE jobs SET state = 'RUNNING', owner = $2, "
                               "attempt = $3::int, lease_until = ",
                               kNow, " + $4::bigint, record = $5 WHERE id = $1"),
                  {r.id, c.server, Str(r.attempts.size()), Str(c.lease_micros), RecordToJson(r)})
            .status());
    claimed = std::move(r);
    return absl::OkStatus();
  }));
  return claimed;
}

absl::StatusOr<bool> PostgresResultStore::PutLeased(const JobRecord& r, int64_t lease_micros) {
  if (r.attempts.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("job ", r.id, " has no attempt to lease"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(
      PgRows rows,
      db_->Exec(
          absl::StrCat("UPDATE jobs SET state = $4, record = $5, drafter_fingerprint = $6, "
                       "dataset_fingerprint = $7, lease_until = CASE WHEN $4 = 'RUNNING' THEN ",
                       kNow,
                       " + $8::bigint ELSE 0 END, owner = CASE WHEN $4 = 'QUEUED' THEN '' "
                       "ELSE owner END WHERE id = $1 AND owner = $2 AND attempt = $3::int AND "
                       "state = 'RUNNING' RETURNING cancel_requested"),
          {r.id, r.attempts.back().server, Str(r.attempts.size()), types::JobStateName(r.state),
           RecordToJson(r), r.drafter_fingerprint, r.dataset_fingerprint, Str(lease_micros)}));
  if (rows.size() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("lease lost: job ", r.id, " attempt ", r.attempts.size(), " is no longer ",
                     r.attempts.back().server,
                     "'s (its lease expired and another server took "
                     "it over, or it ended)"));
  }
  return rows.Bool(0, 0);
}

absl::StatusOr<JobRecord> PostgresResultStore::RequestCancel(const std::string& id,
                                                             int64_t now_unix_micros) {
  JobRecord r;
  std::lock_guard<std::mutex> lock(mu_);
  RETURN_IF_ERROR(db_->InTransaction([&]() -> absl::Status {
    ASSIGN_OR_RETURN(PgRows rows,
                     db_->Exec("SELECT record FROM jobs WHERE id = $1 FOR UPDATE", {id}));
    if (rows.size() == 0) return absl::NotFoundError(absl::StrCat("no job with id '", id, "'"));
    ASSIGN_OR_RETURN(r, RecordFromJson(rows.Text(0, 0)));
    if (types::IsTerminal(r.state)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job ", id, " already finished (", types::JobStateName(r.state), "); nothing to cancel"));
    }
    if (r.state == JobState::kRunning) {
      return db_->Exec("UPDATE jobs SET cancel_requested = true WHERE id = $1", {id}).status();
    }
    r.state = JobState::kCancelled;
    r.end_unix_micros = now_unix_micros;
    r.error_code = static_cast<int>(absl::StatusCode::kCancelled);
    r.error_message = "cancelled before it started";
    return db_
        ->Exec("UPDATE jobs SET state = 'CANCELLED', record = $2 WHERE id = $1",
               {id, RecordToJson(r)})
        .status();
  }));
  return r;
}

absl::Status PostgresResultStore::Heartbeat(const std::string& server,
                                            const std::string& info_json) {
  std::lock_guard<std::mutex> lock(mu_);
  return db_
      ->Exec(
          absl::StrCat("INSERT INTO servers (name, info, heartbeat_micros) VALUES ($1, $2, ", kNow,
                       ") ON CONFLICT (name) DO UPDATE SET info = EXCLUDED.info, "
                       "heartbeat_micros = EXCLUDED.heartbeat_micros"),
          {server, info_json})
      .status();
}

absl::StatusOr<std::vector<FleetServer>> PostgresResultStore::LiveServers(int64_t max_age_micros) {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(PgRows rows, db_->Exec(absl::StrCat("SELECT name, info, ", kNow,
                                                       " - heartbeat_micros FROM servers WHERE "
                                                       "heartbeat_micros > ",
                                                       kNow, " - $1::bigint ORDER BY name"),
                                          {Str(max_age_micros)}));
  std::vector<FleetServer> servers;
  servers.reserve(rows.size());
  for (int i = 0; i < rows.size(); ++i) {
    servers.push_back({rows.Text(i, 0), rows.Text(i, 1), rows.Int(i, 2)});
  }
  return servers;
}

absl::StatusOr<int64_t> PostgresResultStore::CountQueued() {
  std::lock_guard<std::mutex> lock(mu_);
  ASSIGN_OR_RETURN(PgRows rows, db_->Exec("SELECT count(*) FROM jobs WHERE state = 'QUEUED'"));
  return rows.Int(0, 0);
}

absl::Status PostgresResultStore::Leave(const std::string& server) {
  std::lock_guard<std::mutex> lock(mu_);
  return db_->Exec("DELETE FROM servers WHERE name = $1", {server}).status();
}

}  // namespace dflash::store
