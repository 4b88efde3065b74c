#include "data/content_hash.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::data {
namespace {

std::vector<unsigned char> Bytes(size_t n, uint32_t seed) {
  std::vector<unsigned char> v(n);
  uint32_t x = seed;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<unsigned char>(x >> 24);
  }
  return v;
}

uint64_t Once(const std::vector<unsigned char>& b) {
  ContentHash h;
  h.Update(b.data(), b.size());
  return h.Digest();
}

TEST(ContentHashTest, IndependentOfHowBytesAreSplit) {
  const auto b = Bytes(1000, 1);
  const uint64_t whole = Once(b);
  for (size_t piece : {1u, 3u, 7u, 8u, 31u, 63u, 64u, 65u, 129u, 999u}) {
    ContentHash h;
    for (size_t off = 0; off < b.size(); off += piece) {
      h.Update(b.data() + off, std::min(piece, b.size() - off));
    }
    EXPECT_EQ(h.Digest(), whole) << "pieces of " << piece;
  }
}

TEST(ContentHashTest, EveryByteAndLengthMatters) {
  for (size_t n : {0u, 1u, 8u, 63u, 64u, 65u, 130u}) {
    SCOPED_TRACE(n);
    auto b = Bytes(n, 2);
    const uint64_t base = Once(b);
    for (size_t i = 0; i < n; ++i) {
      b[i] ^= 0x80;
      EXPECT_NE(Once(b), base) << "byte " << i;
      b[i] ^= 0x80;
    }
    auto longer = b;
    longer.push_back(0);
    EXPECT_NE(Once(longer), base);
  }
}

TEST(ContentHashTest, OrderMatters) {
  const auto b = Bytes(128, 4);
  std::vector<unsigned char> swapped(b.begin() + 64, b.end());
  swapped.insert(swapped.end(), b.begin(), b.begin() + 64);
  EXPECT_NE(Once(swapped), Once(b));
}

TEST(ContentHashTest, HexFormat) {
  ContentHash h;
  h.UpdateU64(42);
  EXPECT_THAT(h.Hex(), ::testing::MatchesRegex("h64:[0-9a-f]{16}"));
}

}  // namespace
}  // namespace dflash::data
