#include "weights/fingerprint.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::weights {
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

TEST(HashBytes64Test, DeterministicAndSeeded) {
  const auto b = Bytes(1000, 1);
  EXPECT_EQ(HashBytes64(b.data(), b.size(), 7), HashBytes64(b.data(), b.size(), 7));
  EXPECT_NE(HashBytes64(b.data(), b.size(), 7), HashBytes64(b.data(), b.size(), 8));
}

TEST(HashBytes64Test, EveryByteAndLengthMatters) {
  // Sizes around the 64-byte step and the 8-byte tail; flip each byte once.
  for (size_t n : {1u, 7u, 8u, 9u, 63u, 64u, 65u, 127u, 130u, 200u}) {
    SCOPED_TRACE(n);
    auto b = Bytes(n, 3);
    const uint64_t base = HashBytes64(b.data(), n, 0);
    for (size_t i = 0; i < n; ++i) {
      b[i] ^= 0x01;
      EXPECT_NE(HashBytes64(b.data(), n, 0), base) << "byte " << i;
      b[i] ^= 0x01;
    }
    // A trailing zero byte is not the same content.
    std::vector<unsigned char> longer = b;
    longer.push_back(0);
    EXPECT_NE(HashBytes64(longer.data(), longer.size(), 0), base);
  }
}

TEST(HashBytes64Test, OrderMatters) {
  // Two 64-byte stripes swapped: same words per lane, different order.
  auto b = Bytes(128, 5);
  const uint64_t base = HashBytes64(b.data(), b.size(), 0);
  std::vector<unsigned char> swapped(b.begin() + 64, b.end());
  swapped.insert(swapped.end(), b.begin(), b.begin() + 64);
  EXPECT_NE(HashBytes64(swapped.data(), swapped.size(), 0), base);
  // Two words swapped within a stripe (they feed different lanes).
  std::vector<unsigned char> words = b;
  std::swap_ranges(words.begin(), words.begin() + 8, words.begin() + 8);
  EXPECT_NE(HashBytes64(words.data(), words.size(), 0), base);
}

TEST(FingerprinterTest, MetadataMatters) {
  const auto b = Bytes(256, 9);
  auto hex = [&](const char* name, const char* dtype, std::vector<int64_t> shape) {
    Fingerprinter fp;
    fp.AddTensor(name, dtype, shape, b.data(), b.size());
    return fp.Hex();
  };
  const std::string base = hex("fc.weight", "F32", {8, 8});
  EXPECT_THAT(base, ::testing::MatchesRegex("h64:[0-9a-f]{16}"));
  EXPECT_EQ(base, hex("fc.weight", "F32", {8, 8}));
  EXPECT_NE(base, hex("fc.bias", "F32", {8, 8}));
  EXPECT_NE(base, hex("fc.weight", "BF16", {8, 8}));
  EXPECT_NE(base, hex("fc.weight", "F32", {4, 16}));
}

}  // namespace
}  // namespace dflash::weights
