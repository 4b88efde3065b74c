#include "store/pg_connection.h"

#include <libpq-fe.h>

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace dflash::store {
namespace {

constexpr char kUniqueViolation[] = "23505";

std::string Trimmed(const char* message) {
  return std::string(absl::StripTrailingAsciiWhitespace(message ? message : ""));
}

// InvalidArgument when `url` does not parse or carries a password.
absl::Status CheckUrl(const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (options == nullptr) {
    std::string message = Trimmed(error);
    PQfreemem(error);
    return absl::InvalidArgumentError(
        absl::StrCat("--store: not a PostgreSQL URL or conninfo: ", message));
  }
  bool has_password = false;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (std::strcmp(o->keyword, "password") == 0 && o->val != nullptr && *o->val != '\0') {
      has_password = true;
    }
  }
  PQconninfoFree(options);
  if (has_password) {
    return absl::InvalidArgumentError(
        "--store: the PostgreSQL URL carries a password; command lines are visible to every "
        "user (ps) and end up in logs. Put it in a file and pass --store-password-file FILE, "
        "or use PGPASSWORD or a PGPASSFILE (~/.pgpass)");
  }
  return absl::OkStatus();
}

}  // namespace

PgRows::PgRows(pg_result* result) : result_(result, PQclear) {}
int PgRows::size() const {
  return PQntuples(result_.get());
}
std::string PgRows::Text(int row, int col) const {
  return std::string(PQgetvalue(result_.get(), row, col),
                     static_cast<size_t>(PQgetlength(result_.get(), row, col)));
}
int64_t PgRows::Int(int row, int col) const {
  int64_t v = 0;
  return absl::SimpleAtoi(Text(row, col), &v) ? v : 0;
}
bool PgRows::Bool(int row, int col) const {
  return Text(row, col) == "t";
}

absl::StatusOr<std::unique_ptr<PgConnection>> PgConnection::Connect(const std::string& url,
                                                                    const std::string& password) {
  if (absl::Status ok = CheckUrl(url); !ok.ok()) return ok;
  std::vector<const char*> keys = {"dbname", "application_name", "connect_timeout"};
  // Notices ("relation ... already exists, skipping") are not for the log.
  std::vector<const char*> values = {url.c_str(), "dflash-evald", "10"};
  keys.push_back("options");
  values.push_back("-c client_min_messages=warning");
  if (!password.empty()) {
    keys.push_back("password");
    values.push_back(password.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  pg_conn* conn = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  std::string where = conn ? absl::StrCat(Trimmed(PQhost(conn)), ":", Trimmed(PQport(conn)), "/",
                                          Trimmed(PQdb(conn)))
                           : url;
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
    std::string message = conn ? Trimmed(PQerrorMessage(conn)) : "out of memory";
    PQfinish(conn);
    return absl::UnavailableError(
        absl::StrCat("cannot connect to PostgreSQL at ", where, ": ", message));
  }
  return std::unique_ptr<PgConnection>(new PgConnection(conn, std::move(where)));
}

PgConnection::~PgConnection() {
  PQfinish(conn_);
}

absl::StatusOr<PgRows> PgConnection::Exec(const std::string& sql,
                                          const std::vector<std::string>& params) {
  if (PQstatus(conn_) != CONNECTION_OK) PQreset(conn_);  // the server restarted, or the network
  std::vector<const char*> values;
  for (const std::string& p : params) values.push_back(p.c_str());
  return Check(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                            values.data(), nullptr, nullptr, 0),
               sql);
}

absl::Status PgConnection::ExecScript(const std::string& sql) {
  if (PQstatus(conn_) != CONNECTION_OK) PQreset(conn_);
  return Check(PQexec(conn_, sql.c_str()), sql).status();
}

absl::StatusOr<PgRows> PgConnection::Check(pg_result* result, const std::string& sql) {
  PgRows rows(result);  // frees it on every path
  const ExecStatusType status = result ? PQresultStatus(result) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return rows;
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string message = Trimmed(result ? PQresultErrorMessage(result) : PQerrorMessage(conn_));
  const std::string trimmed(absl::StripLeadingAsciiWhitespace(sql));
  const std::string first_line = trimmed.substr(0, trimmed.find('\n'));
  if (state != nullptr && std::strcmp(state, kUniqueViolation) == 0) {
    return absl::AlreadyExistsError(absl::StrCat("results store (", where_, "): ", message));
  }
  if (PQstatus(conn_) != CONNECTION_OK) {
    return absl::UnavailableError(absl::StrCat(
        "results store: lost the connection to PostgreSQL at ", where_, ": ", message));
  }
  return absl::InternalError(
      absl::StrCat("results store (", where_, "): '", first_line, "': ", message));
}

}  // namespace dflash::store
