// File: postgres_server.h
// A real PostgreSQL server for tests: Debian's postgresql binaries
// (/usr/lib/postgresql/N/bin, or $DFLASH_PG_BIN) run initdb and pg_ctl in a
// temporary folder, listening on a free loopback port with trust
// authentication; stopped and removed when the object dies. As root (CI),
// the cluster belongs to `nobody`, since PostgreSQL refuses to run as root.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "test_util/temp_dir.h"

namespace dflash::testing {

class PostgresServer {
 public:
  static absl::StatusOr<std::unique_ptr<PostgresServer>> Start();
  ~PostgresServer();  // pg_ctl stop -m immediate

  int port() const { return port_; }
  // postgresql://postgres@127.0.0.1:PORT/DATABASE
  std::string Url(const std::string& database) const;
  // Runs SQL through psql on `database`; the output (unaligned, tuples only).
  absl::StatusOr<std::string> Sql(const std::string& database, const std::string& sql) const;
  // CREATE DATABASE name; returns Url(name).
  absl::StatusOr<std::string> CreateDatabase(const std::string& name) const;

 private:
  PostgresServer() = default;
  std::unique_ptr<TempDir> dir_;
  std::string bin_, data_;
  int port_ = 0;
};

}  // namespace dflash::testing
