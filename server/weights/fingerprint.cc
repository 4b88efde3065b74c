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

ByteHasher::ByteHasher(uint64_t seed)
    : lanes_{seed ^ kMul0,       seed ^ kMul1,       seed ^ kMul2,       seed ^ kMul3,
             (seed ^ kMul0) + 1, (seed ^ kMul1) + 1, (seed ^ kMul2) + 1, (seed ^ kMul3) + 1} {}

void ByteHasher::Update(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t a = lanes_[0], b = lanes_[1], c = lanes_[2], d = lanes_[3];
  uint64_t e = lanes_[4], f = lanes_[5], g = lanes_[6], h = lanes_[7];
  // Eight independent chains (64 bytes a step): a multiply has a few cycles
  // of latency, so eight in flight keep the loop at memory speed.
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
  // The tail (the last call's only: earlier calls pass multiples of 64).
  for (; i + 8 <= size; i += 8) a = Lane(a, Load64(p + i), kMul0);
  if (i < size) {
    unsigned char tail[8] = {0};
    std::memcpy(tail, p + i, size - i);
    b = Lane(b, Load64(tail), kMul1);
  }
  lanes_ = {a, b, c, d, e, f, g, h};
  size_ += size;
}

uint64_t ByteHasher::Finish() const {
  const auto& l = lanes_;
  const uint64_t x = Finalise(l[0]) ^ (Finalise(l[1]) * 3) ^ (Finalise(l[2]) * 5) ^
                     (Finalise(l[3]) * 7) ^ (Finalise(l[4]) * 9) ^ (Finalise(l[5]) * 11) ^
                     (Finalise(l[6]) * 13) ^ (Finalise(l[7]) * 15) ^ static_cast<uint64_t>(size_);
  return Finalise(x);
}

uint64_t HashBytes64(const void* data, size_t size, uint64_t seed) {
  ByteHasher h(seed);
  h.Update(data, size);
  return h.Finish();
}

ByteHasher Fingerprinter::BeginTensor(absl::string_view name, absl::string_view dtype,
                                      const std::vector<int64_t>& shape) {
  // Length-prefixed metadata so that ("ab","c") and ("a","bc") differ.
  std::string meta = absl::StrCat(name.size(), ":", name, "|", dtype, "|");
  for (int64_t d : shape) absl::StrAppend(&meta, d, ",");
  return ByteHasher(HashBytes64(meta.data(), meta.size(), state_));
}

void Fingerprinter::EndTensor(const ByteHasher& bytes) {
  state_ = bytes.Finish();
}

void Fingerprinter::AddTensor(absl::string_view name, absl::string_view dtype,
                              const std::vector<int64_t>& shape, const void* data, size_t nbytes) {
  ByteHasher h = BeginTensor(name, dtype, shape);
  h.Update(data, nbytes);
  EndTensor(h);
}

std::string Fingerprinter::Hex() const {
  return absl::StrFormat("h64:%016x", state_);
}

}  // namespace dflash::weights
