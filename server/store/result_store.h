// File: store/result_store.h
// Durable job records: every evaluation job, its request and its full result.
// Callers (jobs/, core/) see only this narrow interface; SqliteResultStore is
// the one implementation today. A shared PostgreSQL store (several servers,
// one database) is meant to be another implementation of this class, with no
// change to callers: nothing here assumes SQLite (page tokens are opaque,
// filters are plain values, labels are matched exactly).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "types/job_types.h"

namespace dflash::store {

class ResultStore {
 public:
  virtual ~ResultStore() = default;

  // Inserts or replaces the record with this id, in one transaction. A record
  // in state SUCCEEDED is on stable storage when this returns OK.
  virtual absl::Status Put(const jobs::JobRecord& record) = 0;
  // NotFound for an unknown id.
  virtual absl::StatusOr<jobs::JobRecord> Get(const std::string& id) = 0;
  // InvalidArgument for a malformed page token.
  virtual absl::StatusOr<jobs::JobPage> List(const jobs::ListQuery& query) = 0;
  // At startup: every QUEUED or RUNNING record (left by a crash) becomes
  // INTERRUPTED with interrupted_by_restart set. Returns the ids changed.
  virtual absl::StatusOr<std::vector<std::string>> MarkInterruptedOnStartup(
      int64_t now_unix_micros) = 0;
  // The greatest job id stored ("" when empty): new ids sort after it.
  virtual absl::StatusOr<std::string> MaxId() = 0;
};

}  // namespace dflash::store
