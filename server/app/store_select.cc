#include "app/store_select.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "store/postgres_result_store.h"
#include "store/sqlite_result_store.h"

namespace dflash::app {
namespace {

absl::StatusOr<std::string> ReadPassword(const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--store-password-file: cannot read '", path, "'"));
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string password(absl::StripAsciiWhitespace(text.str()));
  if (password.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--store-password-file '", path, "' is empty"));
  }
  return password;
}

}  // namespace

absl::StatusOr<OpenedStore> OpenStore(const ServerConfig& config) {
  const std::string& s = config.store;
  if (absl::StartsWith(s, "postgresql://") || absl::StartsWith(s, "postgres://")) {
    ASSIGN_OR_RETURN(std::string password, ReadPassword(config.store_password_file));
    ASSIGN_OR_RETURN(auto pg, store::PostgresResultStore::Open(s, password));
    std::string where = absl::StrCat("postgresql ", pg->where());
    return OpenedStore{std::move(pg), std::move(where)};
  }
  if (!config.store_password_file.empty()) {
    return absl::InvalidArgumentError("--store-password-file is for a postgresql:// --store");
  }
  std::string path = config.state_dir + "/results.sqlite3";
  if (absl::StartsWith(s, "sqlite:")) {
    path = s.substr(7);
  } else if (!s.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--store '", s, "': expected sqlite:PATH or postgresql://USER@HOST:PORT/DATABASE"));
  }
  if (path.empty()) return absl::InvalidArgumentError("--store sqlite: needs a file path");
  ASSIGN_OR_RETURN(auto sqlite, store::SqliteResultStore::Open(path));
  return OpenedStore{std::move(sqlite), path};
}

std::string FleetName(const ServerConfig& config) {
  if (!config.fleet_name.empty()) return config.fleet_name;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string port = config.listen.substr(config.listen.rfind(':') + 1);
  // The port is not bound yet: the process id keeps the name unique.
  if (port == "0" || port.empty()) port = absl::StrCat("0-pid", getpid());
  return absl::StrCat(host, ":", port);
}

}  // namespace dflash::app
