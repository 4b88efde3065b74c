#include "test_util/postgres_server.h"

#include <arpa/inet.h>
#include <glob.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "test_util/process.h"

namespace dflash::testing {
namespace {

absl::StatusOr<std::string> FindPgBin() {
  if (const char* env = std::getenv("DFLASH_PG_BIN"); env && *env) return std::string(env);
  glob_t g;
  std::string found;
  if (glob("/usr/lib/postgresql/*/bin/initdb", 0, nullptr, &g) == 0 && g.gl_pathc > 0) {
    found = g.gl_pathv[g.gl_pathc - 1];  // the newest version
    found = found.substr(0, found.rfind('/'));
  }
  globfree(&g);
  if (found.empty()) {
    return absl::NotFoundError(
        "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb); install Debian's "
        "postgresql package (scripts/install-deps.sh) or set DFLASH_PG_BIN");
  }
  return found;
}

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// PostgreSQL refuses root: as root, commands run as `nobody`.
std::vector<std::string> AsUnprivileged(std::vector<std::string> argv) {
  if (geteuid() != 0) return argv;
  std::vector<std::string> wrapped = {"/usr/sbin/runuser", "-u", "nobody", "--"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

absl::Status Run(const std::vector<std::string>& argv, const char* what) {
  CommandResult r = RunCommand(AsUnprivileged(argv), {}, 120);
  if (r.exit_code != 0) {
    return absl::InternalError(
        absl::StrCat(what, " failed (exit ", r.exit_code, "): ", r.out, r.err));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostgresServer>> PostgresServer::Start() {
  absl::StatusOr<std::string> bin = FindPgBin();
  if (!bin.ok()) return bin.status();
  std::unique_ptr<PostgresServer> pg(new PostgresServer());
  pg->dir_ = std::make_unique<TempDir>();
  pg->bin_ = *bin;
  pg->data_ = pg->dir_->Join("data");
  if (geteuid() == 0) {
    const passwd* nobody = getpwnam("nobody");
    if (nobody == nullptr || chown(pg->dir_->path().c_str(), nobody->pw_uid, nobody->pw_gid) != 0) {
      return absl::InternalError("cannot hand the PostgreSQL folder to user nobody");
    }
  }
  if (absl::Status s = Run({pg->bin_ + "/initdb", "-D", pg->data_, "-A", "trust", "-U", "postgres",
                            "--no-sync", "-E", "UTF8"},
                           "initdb");
      !s.ok()) {
    return s;
  }
  for (int tries = 0; tries < 5; ++tries) {
    pg->port_ = FreeLoopbackPort();
    // -F: no fsync (a test cluster); the socket stays in the private folder.
    absl::Status started =
        Run({pg->bin_ + "/pg_ctl", "start", "-D", pg->data_, "-l", pg->dir_->Join("server.log"),
             "-w", "-t", "60", "-o",
             absl::StrCat("-h 127.0.0.1 -p ", pg->port_, " -k ", pg->dir_->path(),
                          " -F "
                          "-c max_connections=200")},
            "pg_ctl start");
    if (started.ok()) return pg;
    if (tries == 4) {
      return absl::InternalError(
          absl::StrCat(started.message(), "\n", ReadFileOrEmpty(pg->dir_->Join("server.log"))));
    }
  }
  return absl::InternalError("unreachable");
}

PostgresServer::~PostgresServer() {
  if (port_ != 0) {
    RunCommand(AsUnprivileged({bin_ + "/pg_ctl", "-D", data_, "-m", "immediate", "-w", "stop"}), {},
               60);
  }
}

std::string PostgresServer::Url(const std::string& database) const {
  return absl::StrCat("postgresql://postgres@127.0.0.1:", port_, "/", database);
}

absl::StatusOr<std::string> PostgresServer::Sql(const std::string& database,
                                                const std::string& sql) const {
  CommandResult r = RunCommand({"/usr/bin/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                                "-d", Url(database), "-c", sql},
                               {}, 60);
  if (r.exit_code != 0) {
    return absl::InternalError(absl::StrCat("psql '", sql, "' failed: ", r.err));
  }
  return std::string(absl::StripAsciiWhitespace(r.out));
}

absl::StatusOr<std::string> PostgresServer::CreateDatabase(const std::string& name) const {
  absl::StatusOr<std::string> made = Sql("postgres", absl::StrCat("CREATE DATABASE ", name));
  if (!made.ok()) return made.status();
  return Url(name);
}

}  // namespace dflash::testing
