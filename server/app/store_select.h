// File: store_select.h
// --store: which ResultStore the server uses. SQLite (one host, the default:
// STATE_DIR/results.sqlite3, or sqlite:PATH) or PostgreSQL (postgresql://...
// or postgres://...: a fleet sharing one queue and one history). The
// password never comes from the command line.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "app/server_config.h"
#include "store/result_store.h"

namespace dflash::app {

struct OpenedStore {
  std::unique_ptr<store::ResultStore> store;
  std::string description;  // for the log: the file, or host:port/db
};

// InvalidArgument for an unknown scheme, a password in the URL or an
// unreadable password file; the stores' own errors otherwise.
absl::StatusOr<OpenedStore> OpenStore(const ServerConfig& config);

// --fleet-name, else HOSTNAME:PORT (the port of --listen; with port 0,
// HOSTNAME:0-pidPID, since the port is bound later).
std::string FleetName(const ServerConfig& config);

}  // namespace dflash::app
