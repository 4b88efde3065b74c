// --store and --fleet-name (app/store_select.h): which store a server opens,
// and the refusals that keep a password off the command line.
#include "app/store_select.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::app {
namespace {

using ::dflash::testing::StatusIs;
using ::dflash::testing::TempDir;
using ::testing::HasSubstr;

TEST(StoreSelectTest, DefaultIsSqliteInTheStateDir) {
  TempDir dir;
  ServerConfig config;
  config.state_dir = dir.path();
  absl::StatusOr<OpenedStore> s = OpenStore(config);
  ASSERT_OK(s.status());
  EXPECT_EQ(s->description, dir.Join("results.sqlite3"));
  EXPECT_FALSE(s->store->shared());
  EXPECT_TRUE(std::filesystem::exists(dir.Join("results.sqlite3")));
}

TEST(StoreSelectTest, SqlitePathIsUsedAsGiven) {
  TempDir dir;
  ServerConfig config;
  config.state_dir = dir.Join("unused");
  config.store = "sqlite:" + dir.Join("elsewhere.db");
  absl::StatusOr<OpenedStore> s = OpenStore(config);
  ASSERT_OK(s.status());
  EXPECT_EQ(s->description, dir.Join("elsewhere.db"));
  EXPECT_TRUE(std::filesystem::exists(dir.Join("elsewhere.db")));
}

TEST(StoreSelectTest, RefusesWhatItCannotUse) {
  ServerConfig config;
  config.store = "mysql://db/x";
  EXPECT_THAT(OpenStore(config), StatusIs(absl::StatusCode::kInvalidArgument,
                                          "--store 'mysql://db/x': expected sqlite:PATH or "
                                          "postgresql://USER@HOST:PORT/DATABASE"));
  config.store = "sqlite:";
  EXPECT_THAT(OpenStore(config),
              StatusIs(absl::StatusCode::kInvalidArgument, "--store sqlite: needs a file path"));
  config.store = "";
  config.store_password_file = "/x/pw";
  EXPECT_THAT(OpenStore(config), StatusIs(absl::StatusCode::kInvalidArgument,
                                          "--store-password-file is for a postgresql:// --store"));
}

// Both refusals come before any connection is tried (port 1: nothing there).
TEST(StoreSelectTest, PostgresPasswordNeverFromTheCommandLine) {
  TempDir dir;
  ServerConfig config;
  config.store = "postgresql://eval:secret@127.0.0.1:1/results";
  EXPECT_THAT(OpenStore(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--store: the PostgreSQL URL carries a password")));
  config.store = "postgres://eval@127.0.0.1:1/results";
  config.store_password_file = dir.Join("missing");
  EXPECT_THAT(OpenStore(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--store-password-file: cannot read '" + dir.Join("missing") + "'"));
  config.store_password_file = dir.WriteFile("blank", " \n");
  EXPECT_THAT(OpenStore(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--store-password-file '" + dir.Join("blank") + "' is empty"));
}

TEST(StoreSelectTest, FleetName) {
  ServerConfig config;
  config.fleet_name = "gpu-7";
  EXPECT_EQ(FleetName(config), "gpu-7");
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  config.fleet_name.clear();
  config.listen = "0.0.0.0:50051";
  EXPECT_EQ(FleetName(config), absl::StrCat(host, ":50051"));
  // Port 0 is bound later: the process id keeps two such servers apart.
  config.listen = "127.0.0.1:0";
  EXPECT_EQ(FleetName(config), absl::StrCat(host, ":0-pid", getpid()));
}

}  // namespace
}  // namespace dflash::app
