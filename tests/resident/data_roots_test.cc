// The data roots on a real temporary tree: roots created and canonicalised,
// paths resolved through '..' and symbolic links, every refusal with its
// exact message (the same whether or not the path exists), and the link
// check inside folders and beside files.
#include "resident/data_roots.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::resident {
namespace {

using ::dflash::testing::StatusIs;
namespace fs = std::filesystem;

class DataRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::canonical(tmp_.path()).string();
    root_ = base_ + "/root";
    ASSERT_OK_AND_ASSIGN(roots_, DataRoots::Create({root_}));
    tmp_.WriteFile("root/models/a/model.safetensors", "x");
    tmp_.WriteFile("outside/secret.txt", "s");
  }
  void Link(const std::string& target, const std::string& at) {
    ASSERT_EQ(::symlink(target.c_str(), at.c_str()), 0) << at;
  }

  dflash::testing::TempDir tmp_;
  std::string base_, root_;
  DataRoots roots_;
};

TEST_F(DataRootsTest, RootsAreCreatedAndCanonical) {
  EXPECT_TRUE(fs::is_directory(root_));
  EXPECT_THAT(roots_.roots(), ::testing::ElementsAre(root_));
  ASSERT_OK_AND_ASSIGN(DataRoots r, DataRoots::Create({root_ + "/models/../models/"}));
  EXPECT_THAT(r.roots(), ::testing::ElementsAre(root_ + "/models"));
}

TEST_F(DataRootsTest, BadRootsAreNamed) {
  EXPECT_THAT(DataRoots::Create({}),
              StatusIs(absl::StatusCode::kInvalidArgument, "no data roots given"));
  const std::string file = root_ + "/models/a/model.safetensors";
  EXPECT_THAT(DataRoots::Create({file}), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  "data root '" + file + "' is not a directory"));
  EXPECT_THAT(DataRoots::Create({file + "/sub"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "data root '" + file + "/sub': Not a directory"));
}

TEST_F(DataRootsTest, PathsInsideResolve) {
  ASSERT_OK_AND_ASSIGN(std::string p, roots_.Resolve(root_ + "/models/a"));
  EXPECT_EQ(p, root_ + "/models/a");
  ASSERT_OK_AND_ASSIGN(p, roots_.Resolve("models/./a/../a"));  // relative to the first root
  EXPECT_EQ(p, root_ + "/models/a");
  ASSERT_OK_AND_ASSIGN(p, roots_.Resolve(root_ + "/not-yet/there"));  // need not exist
  EXPECT_EQ(p, root_ + "/not-yet/there");
  ASSERT_OK_AND_ASSIGN(p, roots_.Resolve(root_));
  EXPECT_EQ(p, root_);
  Link(root_ + "/models/a", root_ + "/alias");  // a link that stays inside
  ASSERT_OK_AND_ASSIGN(p, roots_.Resolve("alias/model.safetensors"));
  EXPECT_EQ(p, root_ + "/models/a/model.safetensors");
}

TEST_F(DataRootsTest, PathsOutsideAreDeniedAlike) {
  const auto denied = [&](const std::string& path) {
    EXPECT_THAT(roots_.Resolve(path, "config_path"),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "config_path '" + path + "' is outside the server's data roots"));
  };
  denied(base_ + "/outside/secret.txt");  // exists
  denied(base_ + "/outside/none.txt");    // does not
  denied("../outside/secret.txt");
  denied(root_ + "/../outside");
  denied(root_ + "x/file");  // a sibling whose name starts with the root's
  Link(base_ + "/outside", root_ + "/escape");
  denied("escape/secret.txt");
}

TEST_F(DataRootsTest, BadPathsAreNamed) {
  const auto code = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(roots_.Resolve(""), StatusIs(code, "path is empty"));
  EXPECT_THAT(roots_.Resolve(std::string("a\0b", 3), "dataset"),
              StatusIs(code, "dataset contains a NUL byte"));
  EXPECT_THAT(roots_.Resolve(std::string(4097, 'a')),
              StatusIs(code, "path is 4097 bytes long; at most 4096 are allowed"));
}

TEST_F(DataRootsTest, LinksOutOfTheRootsAreFoundInFolders) {
  const std::string dir = root_ + "/models";
  EXPECT_OK(roots_.CheckLinks(dir));
  Link(root_ + "/models/a/model.safetensors", dir + "/a/inside.safetensors");
  EXPECT_OK(roots_.CheckLinks(dir));
  Link(base_ + "/outside/secret.txt", dir + "/a/shard.safetensors");
  EXPECT_THAT(roots_.CheckLinks(dir),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "'" + dir +
                           "/a/shard.safetensors' is a symbolic link to a place outside "
                           "the server's data roots"));
}

TEST_F(DataRootsTest, AFileHasItsConfigChecked) {
  const std::string file = root_ + "/models/a/model.safetensors";
  EXPECT_OK(roots_.CheckLinks(file));
  Link(base_ + "/outside/secret.txt", root_ + "/models/a/config.json");
  EXPECT_THAT(roots_.CheckLinks(file),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "'" + root_ +
                           "/models/a/config.json' is a symbolic link to a place outside the "
                           "server's data roots"));
}

TEST_F(DataRootsTest, TooManyEntriesAreRefused) {
  EXPECT_OK(roots_.CheckLinks(root_ + "/models", 2));  // a/ and its file
  EXPECT_THAT(roots_.CheckLinks(root_ + "/models", 1),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "'" + root_ + "/models' holds more than 1 entries; refusing to read it"));
}

}  // namespace
}  // namespace dflash::resident
