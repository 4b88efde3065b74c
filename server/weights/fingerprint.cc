#include "weights/fingerprint.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dflash::weights {
namespace {

constexpr uint64_t kMul0 = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kMul1 = 0xc2b2ae3d27d4eb4full;
constexpr uint64_t kMul2 = 0x165667b19e3779f9ull;
constexpr uint64_t kMul3 = 0xd6e8feb86659fd93ull;

inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // little-endian hosts only (x86-64, aarch64)
  return v;
}

inline uint64_t Lane(uint64_t lane, uint64_t word, uint64_t mul) {
  lane = (lane ^ word) * mul;
  return lane ^ (lane >> 29);
}

// splitmix64's finaliser: full avalanche of the combined lanes.
inline uint64_t Finalise(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t HashBytes64(const void* data, size_t size, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  // Eight independent chains (64 bytes a step): a multiply has a few cycles
  // of latency, so eight in flight keep the loop at memory speed.
  uint64_t a = seed ^ kMul0, b = seed ^ kMul1, c = seed ^ kMul2, d = seed ^ kMul3;
  uint64_t e = a + 1, f = b + 1, g = c + 1, h = d + 1;
  size_t i = 0;
  for (; i + 64 <= size; i += 64) {
    a = Lane(a, Load64(p + i), kMul0);
    b = Lane(b, Load64(p + i + 8), kMul1);
    c = Lane(c, Load64(p + i + 16), kMul2);
    d = Lane(d, Load64(p + i + 24), kMul3);
    e = Lane(e, Load64(p + i + 32), kMul0);
    f = Lane(f, Load64(p + i + 40), kMul1);
    g = Lane(g, Load64(p + i + 48), kMul2);
    h = Lane(h, Load64(p + i + 56), kMul3);
  }
  for (; i + 8 <= size; i += 8) a = Lane(a, Load64(p + i), kMul0);
  if (i < size) {
    unsigned char tail[8] = {0};
    std::memcpy(tail, p + i, size - i);
    b = Lane(b, Load64(tail), kMul1);
  }
  const uint64_t x = Finalise(a) ^ (Finalise(b) * 3) ^ (Finalise(c) * 5) ^ (Finalise(d) * 7) ^
                     (Finalise(e) * 9) ^ (Finalise(f) * 11) ^ (Finalise(g) * 13) ^
                     (Finalise(h) * 15) ^ static_cast<uint64_t>(size);
  return Finalise(x);
}

void Fingerprinter::AddTensor(absl::string_view name, absl::string_view dtype,
                              const std::vector<int64_t>& shape, const void* data, size_t nbytes) {
  // Length-prefixed metadata so that ("ab","c") and ("a","bc") differ.
  std::string meta = absl::StrCat(name.size(), ":", name, "|", dtype, "|");
  for (int64_t d : shape) absl::StrAppend(&meta, d, ",");
  state_ = HashBytes64(meta.data(), meta.size(), state_);
  state_ = HashBytes64(data, nbytes, state_);
}

std::string Fingerprinter::Hex() const {
  return absl::StrFormat("h64:%016x", state_);
}

}  // namespace dflash::weights
