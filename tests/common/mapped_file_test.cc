// MappedFile (common/mapped_file.h): what an open reports for each kind of
// path, the bytes and stamp of a mapped file, the stamp's verdict on a file
// rewritten in place against one renamed over or removed, and MapPages.
#include "common/mapped_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash {
namespace {

using ::dflash::testing::IsOk;
using ::dflash::testing::ReadFileOrEmpty;
using ::dflash::testing::StatusIs;
using ::dflash::testing::TempDir;
using ::testing::Eq;
using ::testing::HasSubstr;

void Append(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

class MappedFileTest : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(MappedFileTest, MissingFileIsNotFound) {
  const std::string path = dir_.Join("absent.safetensors");
  EXPECT_THAT(MappedFile::Open(path).status(),
              StatusIs(absl::StatusCode::kNotFound, Eq("no such file '" + path + "'")));
  // A path through a regular file (ENOTDIR) is missing too.
  const std::string file = dir_.WriteFile("plain", "x");
  EXPECT_THAT(MappedFile::Open(file + "/inner").status(),
              StatusIs(absl::StatusCode::kNotFound, Eq("no such file '" + file + "/inner'")));
}

TEST_F(MappedFileTest, DirectoryIsInvalidArgument) {
  EXPECT_THAT(MappedFile::Open(dir_.path()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("'" + dir_.path() + "' is not a regular file")));
}

TEST_F(MappedFileTest, MapsTheBytesAndStampsTheFile) {
  const std::string path = dir_.WriteFile("w.bin", std::string("ab\0cd", 5));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<MappedFile> f, MappedFile::Open(path));
  EXPECT_EQ(f->path(), path);
  EXPECT_EQ(f->size(), 5u);
  EXPECT_EQ(f->bytes(), absl::string_view("ab\0cd", 5));
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(f->stamp().path, path);
  EXPECT_EQ(f->stamp().size, 5u);
  EXPECT_EQ(f->stamp().ino, static_cast<uint64_t>(st.st_ino));
  EXPECT_EQ(f->stamp().dev, static_cast<uint64_t>(st.st_dev));
  EXPECT_EQ(f->stamp().mtime_ns,
            static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
}

TEST_F(MappedFileTest, EmptyFileMapsNoBytes) {
  const std::string path = dir_.WriteFile("empty", "");
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<MappedFile> f, MappedFile::Open(path));
  EXPECT_EQ(f->size(), 0u);
  EXPECT_TRUE(f->bytes().empty());
  EXPECT_EQ(f->stamp().size, 0u);
}

TEST_F(MappedFileTest, AgeCountsFromTheModificationTime) {
  const std::string path = dir_.WriteFile("old", "abc");
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  const struct timespec times[2] = {now, {now.tv_sec - 100, now.tv_nsec}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<MappedFile> f, MappedFile::Open(path));
  EXPECT_GE(f->stamp().AgeSeconds(), 100.0);
  EXPECT_LT(f->stamp().AgeSeconds(), 160.0);
}

TEST_F(MappedFileTest, WrittenInPlaceIsFailedPrecondition) {
  const std::string path = dir_.WriteFile("ckpt", "hello");
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<MappedFile> f, MappedFile::Open(path));
  EXPECT_THAT(f->stamp().CheckUnchanged(), IsOk());
  Append(path, "!!!");
  EXPECT_THAT(f->stamp().CheckUnchanged(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("'" + path +
                          "' was written in place since it was loaded (5 bytes then, 8 now); "
                          "write checkpoints to a temporary name and rename them into place, "
                          "or run the server with --no-mmap")));
  // What was mapped is what was read at open.
  EXPECT_EQ(f->bytes(), "hello");
}

TEST_F(MappedFileTest, SameSizeNewMtimeIsFailedPrecondition) {
  const std::string path = dir_.WriteFile("ckpt", "hello");
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<MappedFile> f, MappedFile::Open(path));
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  const struct timespec later[2] = {now, {now.tv_sec + 5, now.tv_nsec}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), later, 0), 0);
  EXPECT_THAT(f->stamp().CheckUnchanged(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("(5 bytes then, 5 now)")));
}

TEST_F(MappedFileTest, RenamedOverOrRemovedIsOk) {
  const std::string path = dir_.WriteFile("ckpt", "hello");
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<MappedFile> f, MappedFile::Open(path));
  const std::string next = dir_.WriteFile("ckpt.tmp", "a longer replacement");
  ASSERT_EQ(std::rename(next.c_str(), path.c_str()), 0);
  EXPECT_THAT(f->stamp().CheckUnchanged(), IsOk());
  EXPECT_EQ(f->bytes(), "hello");  // the old inode lives on under the mapping
  ASSERT_EQ(std::remove(path.c_str()), 0);
  EXPECT_THAT(f->stamp().CheckUnchanged(), IsOk());
  EXPECT_EQ(f->bytes(), "hello");
}

TEST_F(MappedFileTest, MapPagesNeedsTheDescriptor) {
  const std::string path = dir_.WriteFile("w.bin", "0123456789");
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<MappedFile> closed, MappedFile::Open(path));
  EXPECT_FALSE(closed->MapPages(2, 3).has_value());

  ASSERT_OK_AND_ASSIGN(std::shared_ptr<MappedFile> open,
                       MappedFile::Open(path, MappedFile::Descriptor::kKeepOpen));
  std::optional<MappedFile::Pages> pages = open->MapPages(2, 3);
  ASSERT_TRUE(pages.has_value());
  EXPECT_EQ(std::string(pages->data, 3), "234");
  // Page-aligned around the record: the mapping starts at offset 0 here.
  EXPECT_EQ(pages->data, static_cast<char*>(pages->base) + 2);
  EXPECT_EQ(pages->length, 5u);
  MappedFile::Unmap(*pages);
}

TEST_F(MappedFileTest, PagesArePrivateAndNeverWrittenBack) {
  const std::string path = dir_.WriteFile("w.bin", "0123456789");
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<MappedFile> f,
                       MappedFile::Open(path, MappedFile::Descriptor::kKeepOpen));
  std::optional<MappedFile::Pages> pages = f->MapPages(0, 10);
  ASSERT_TRUE(pages.has_value());
  std::memcpy(pages->data, "XY", 2);  // an in-place op on a tensor over the pages
  EXPECT_EQ(std::string(pages->data, 10), "XY23456789");
  MappedFile::Unmap(*pages);
  EXPECT_EQ(ReadFileOrEmpty(path), "0123456789");
  EXPECT_EQ(f->bytes(), "0123456789");
}

TEST_F(MappedFileTest, ReleasingPagesKeepsTheData) {
  const std::string content(3 * 4096 + 17, 'q');
  const std::string path = dir_.WriteFile("big.bin", content);
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<MappedFile> f, MappedFile::Open(path));
  f->ReleasePages(100, 5000);
  f->ReleasePages(0, content.size() + 4096);  // past the end: clipped
  f->ReleasePages(content.size(), 10);        // at the end: nothing
  EXPECT_EQ(f->bytes(), content);
}

}  // namespace
}  // namespace dflash
