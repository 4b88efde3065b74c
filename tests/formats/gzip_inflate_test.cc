#include "formats/gzip_inflate.h"

#include <zlib.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::formats {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::HasSubstr;

std::string Gzip(const std::string& raw) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, raw.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  zs.avail_in = raw.size();
  zs.next_out = reinterpret_cast<Bytef*>(&out[0]);
  zs.avail_out = out.size();
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

TEST(GunzipTest, RoundTripAndConcatenatedMembers) {
  std::string raw(100000, 'a');
  for (size_t i = 0; i < raw.size(); i += 7) raw[i] = static_cast<char>(i);
  ASSERT_OK_AND_ASSIGN(std::string out, Gunzip(Gzip(raw), "x"));
  EXPECT_EQ(out, raw);
  ASSERT_OK_AND_ASSIGN(std::string two, Gunzip(Gzip("ab") + Gzip("cd"), "x"));
  EXPECT_EQ(two, "abcd");
  ASSERT_OK_AND_ASSIGN(std::string empty, Gunzip(Gzip(""), "x"));
  EXPECT_EQ(empty, "");
}

TEST(GunzipTest, OutputLimitStopsBombs) {
  std::string gz = Gzip(std::string(1 << 20, '\0'));  // ~1 KiB in, 1 MiB out
  EXPECT_THAT(Gunzip(gz, "bomb.gz", 1000),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("'bomb.gz' decompresses to more than 1000 bytes")));
  ASSERT_OK_AND_ASSIGN(std::string exact, Gunzip(gz, "bomb.gz", 1 << 20));
  EXPECT_EQ(exact.size(), size_t{1} << 20);
}

TEST(GunzipTest, BadInput) {
  EXPECT_THAT(Gunzip("PK..", "a.pt"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'a.pt' is not gzip data")));
  std::string gz = Gzip(std::string(5000, 'z') + "tail");
  EXPECT_THAT(
      Gunzip(gz.substr(0, gz.size() - 10), "t.gz"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'t.gz' is a truncated gzip file")));
  std::string bad = gz;
  bad[3] = static_cast<char>(0xff);  // reserved flag bits
  EXPECT_THAT(Gunzip(bad, "b.gz"), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("'b.gz' is a corrupt gzip file")));
}

}  // namespace
}  // namespace dflash::formats
