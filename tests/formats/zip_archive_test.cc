// The zip reader under torch.save files, on archives built byte by byte
// here: every refusal with its exact message, and the zip64 layout.
#include "formats/zip_archive.h"

#include <zlib.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::formats {
namespace {

using ::dflash::testing::IsOk;
using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;

void Put(std::string* s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void Patch(std::string* s, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) (*s)[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

std::string RawDeflate(const std::string& data) {
  z_stream zs{};
  deflateInit2(&zs, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, data.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

struct Member {
  std::string name;
  std::string data;
  bool deflate = false;
};

// A zip as Python's zipfile or torch.save would write it; `central[i]` is
// where member i's central header starts, `end` where the end record does.
struct Built {
  std::string bytes;
  std::vector<size_t> local, central;
  size_t end = 0;
};

Built Write(const std::vector<Member>& members, bool zip64 = false) {
  Built b;
  std::string cd;
  std::vector<size_t> cd_at;
  for (const Member& m : members) {
    const std::string payload = m.deflate ? RawDeflate(m.data) : m.data;
    const uint32_t crc =
        crc32(0, reinterpret_cast<const Bytef*>(m.data.data()), static_cast<uInt>(m.data.size()));
    const uint16_t method = m.deflate ? 8 : 0;
    b.local.push_back(b.bytes.size());
    std::string& s = b.bytes;
    Put(&s, 0x04034b50, 4), Put(&s, 20, 2), Put(&s, 0, 2), Put(&s, method, 2), Put(&s, 0, 4);
    Put(&s, crc, 4), Put(&s, payload.size(), 4), Put(&s, m.data.size(), 4);
    Put(&s, m.name.size(), 2), Put(&s, 0, 2);
    s += m.name + payload;
    cd_at.push_back(cd.size());
    Put(&cd, 0x02014b50, 4), Put(&cd, 20, 2), Put(&cd, 20, 2), Put(&cd, 0, 2);
    Put(&cd, method, 2), Put(&cd, 0, 4), Put(&cd, crc, 4);
    Put(&cd, zip64 ? 0xffffffffu : payload.size(), 4);
    Put(&cd, zip64 ? 0xffffffffu : m.data.size(), 4);
    Put(&cd, m.name.size(), 2), Put(&cd, zip64 ? 20 : 0, 2), Put(&cd, 0, 2);
    Put(&cd, 0, 2), Put(&cd, 0, 2), Put(&cd, 0, 4), Put(&cd, b.local.back(), 4);
    cd += m.name;
    if (zip64)
      Put(&cd, 1, 2), Put(&cd, 16, 2), Put(&cd, m.data.size(), 8), Put(&cd, payload.size(), 8);
  }
  const size_t cd_offset = b.bytes.size();
  for (size_t at : cd_at) b.central.push_back(cd_offset + at);
  b.bytes += cd;
  const uint64_t n = members.size();
  if (zip64) {
    const size_t end64 = b.bytes.size();
    std::string& s = b.bytes;
    Put(&s, 0x06064b50, 4), Put(&s, 44, 8), Put(&s, 45, 2), Put(&s, 45, 2), Put(&s, 0, 4);
    Put(&s, 0, 4), Put(&s, n, 8), Put(&s, n, 8), Put(&s, cd.size(), 8), Put(&s, cd_offset, 8);
    Put(&s, 0x07064b50, 4), Put(&s, 0, 4), Put(&s, end64, 8), Put(&s, 1, 4);
  }
  b.end = b.bytes.size();
  std::string& s = b.bytes;
  Put(&s, 0x06054b50, 4), Put(&s, 0, 2), Put(&s, 0, 2);
  Put(&s, zip64 ? 0xffff : n, 2), Put(&s, zip64 ? 0xffff : n, 2);
  Put(&s, zip64 ? 0xffffffffu : cd.size(), 4), Put(&s, zip64 ? 0xffffffffu : cd_offset, 4);
  Put(&s, 0, 2);
  return b;
}

std::string Read(const ZipArchive& zip, absl::string_view name) {
  const ZipEntry* e = zip.Find(name);
  if (e == nullptr) return "<missing>";
  std::string out(e->uncompressed_size, '\0');
  absl::Status st = zip.ReadInto(*e, out.data(), out.size());
  return st.ok() ? out : std::string(st.message());
}

const std::string kText = "the quick brown fox jumps over the lazy dog, again and again and again";

TEST(ZipArchiveTest, ReadsStoredAndDeflatedEntriesInBothLayouts) {
  for (bool zip64 : {false, true}) {
    SCOPED_TRACE(zip64 ? "zip64" : "zip");
    Built b = Write({{"a/version", "3"}, {"a/data.pkl", kText, true}, {"a/data/0", kText}}, zip64);
    ASSERT_OK_AND_ASSIGN(ZipArchive zip, ZipArchive::Open(b.bytes));
    std::vector<std::string> names;
    for (const ZipEntry& e : zip.entries()) names.push_back(e.name);
    EXPECT_THAT(names, ElementsAre("a/version", "a/data.pkl", "a/data/0"));
    EXPECT_EQ(Read(zip, "a/version"), "3");
    EXPECT_EQ(Read(zip, "a/data.pkl"), kText);
    EXPECT_EQ(Read(zip, "a/data/0"), kText);
    EXPECT_EQ(zip.Find("a/DATA.pkl"), nullptr);
    ASSERT_OK_AND_ASSIGN(uint64_t data, zip.DataOffset(*zip.Find("a/data/0")));
    EXPECT_EQ(b.bytes.substr(data, kText.size()), kText);
  }
}

TEST(ZipArchiveTest, RefusesMalformedDirectories) {
  const Built good = Write({{"a/x", kText}, {"a/y", kText, true}});
  const uint64_t y_compressed = ZipArchive::Open(good.bytes)->Find("a/y")->compressed_size;
  auto open_error = [](const std::string& bytes) {
    absl::StatusOr<ZipArchive> zip = ZipArchive::Open(bytes);
    EXPECT_EQ(zip.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(zip.status().message());
  };
  EXPECT_EQ(open_error("PK\3\4"), "zip archive of 4 bytes is too short for an end record");
  EXPECT_EQ(open_error(good.bytes.substr(0, good.bytes.size() - 1)),
            "no zip end-of-central-directory record (truncated file?)");
  EXPECT_EQ(open_error(good.bytes.substr(0, good.central[0]) + good.bytes.substr(good.end)),
            absl::StrCat("zip central directory (offset ", good.central[0], ", ",
                         good.end - good.central[0], " bytes) runs past its end record at ",
                         good.central[0], " (truncated file?)"));
  {
    std::string s = good.bytes;
    Patch(&s, good.end + 10, 3, 2);  // three entries listed, two present
    EXPECT_EQ(open_error(s), "zip central directory entry 2 of 3 is truncated or has no signature");
  }
  {
    std::string s = good.bytes;
    Patch(&s, good.end + 4, 1, 2);
    EXPECT_EQ(open_error(s), "multi-disk zip archives are not supported");
  }
  {
    std::string s = good.bytes;
    Patch(&s, good.central[1] + 8, 1, 2);
    EXPECT_EQ(open_error(s), "zip entry 'a/y' is encrypted");
  }
  {
    std::string s = good.bytes;
    Patch(&s, good.central[0] + 24, 0xffffffffu, 4);
    EXPECT_EQ(
        open_error(s),
        "entry 'a/x' says its sizes are in a zip64 extra field, which is missing or too short");
  }
  {
    std::string s = good.bytes;
    Patch(&s, good.central[1] + 24, 0x7fffffff, 4);
    EXPECT_EQ(open_error(s),
              absl::StrCat("zip entry 'a/y' declares 2147483647 bytes from ", y_compressed,
                           " compressed, more than deflate can produce"));
  }
  {
    std::string s = good.bytes;
    Patch(&s, good.central[1] + 42, good.central[0], 4);
    EXPECT_EQ(open_error(s),
              absl::StrCat("zip entry 'a/y' (local header at ", good.central[0], ", ", y_compressed,
                           " bytes) lies past the data (", good.central[0], " bytes)"));
  }
  {
    Built dup = Write({{"a/x", "1"}, {"a/x", "2"}});
    EXPECT_EQ(open_error(dup.bytes), "zip entry 'a/x' appears twice");
  }
}

TEST(ZipArchiveTest, ReadsOnlyWhatIsDeclaredAndIntact) {
  const std::string big(1000, 'z');  // deflates to a few bytes
  auto patched = [&](size_t member, size_t field, uint64_t value, int width) {
    Built b = Write({{"a/x", kText}, {"a/big", big, true}});
    Patch(&b.bytes, b.central[member] + field, value, width);
    return b.bytes;
  };
  auto read_error = [](const std::string& bytes, const std::string& name, uint64_t size) {
    absl::StatusOr<ZipArchive> zip = ZipArchive::Open(bytes);
    EXPECT_THAT(zip, IsOk());
    if (!zip.ok()) return std::string();
    std::string out(size + 1, '#');
    absl::Status st = zip->ReadInto(*zip->Find(name), out.data(), size);
    EXPECT_EQ(out[size], '#') << "wrote past the buffer";
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    return std::string(st.message());
  };
  const std::string good = Write({{"a/x", kText}, {"a/big", big, true}}).bytes;
  EXPECT_EQ(read_error(good, "a/big", 999), "zip entry 'a/big' holds 1000 bytes; expected 999");
  EXPECT_EQ(read_error(patched(1, 24, 999, 4), "a/big", 999),
            "zip entry 'a/big' inflates to more than its declared 999 bytes");
  EXPECT_EQ(read_error(patched(1, 24, 1001, 4), "a/big", 1001),
            "zip entry 'a/big' inflates to 1000 bytes; it declares 1001");
  EXPECT_EQ(read_error(patched(0, 16, 12345, 4), "a/x", kText.size()),
            "zip entry 'a/x' fails its CRC-32 check (corrupt file)");
  EXPECT_EQ(read_error(patched(1, 10, 12, 2), "a/big", 1000),
            "zip entry 'a/big' uses compression method 12; only stored (0) and deflate (8) are "
            "supported");
  EXPECT_EQ(read_error(patched(0, 24, kText.size() - 1, 4), "a/x", kText.size() - 1),
            absl::StrCat("stored zip entry 'a/x' has ", kText.size(), " bytes but declares ",
                         kText.size() - 1));
  {
    Built b = Write({{"a/x", kText}, {"a/big", big, true}});
    b.bytes[b.local[1] + 30 + 5] = '\xff';  // first deflate byte: final block, type 3
    EXPECT_EQ(read_error(b.bytes, "a/big", 1000),
              "zip entry 'a/big' is corrupt deflate data (invalid block type) after 0 of 1000 "
              "bytes");
    b.bytes[b.local[1] + 30 + 2] = 'Y';  // the local header's name
    EXPECT_EQ(read_error(b.bytes, "a/big", 1000), "zip entry 'a/big': its local header at " +
                                                      std::to_string(b.local[1]) +
                                                      " names another entry");
  }
  {
    Built b = Write({{"a/x", kText}, {"a/big", big, true}});
    Patch(&b.bytes, b.local[1] + 28, 0xffff, 2);  // the local header's extra length
    const size_t data_offset = b.local[1] + 30 + 5 + 0xffff;
    const uint64_t compressed = ZipArchive::Open(b.bytes)->Find("a/big")->compressed_size;
    EXPECT_EQ(read_error(b.bytes, "a/big", 1000),
              absl::StrCat("zip entry 'a/big' (", compressed, " bytes at ", data_offset,
                           ") runs past the end of the archive (", b.bytes.size(), " bytes)"));
  }
}

}  // namespace
}  // namespace dflash::formats
