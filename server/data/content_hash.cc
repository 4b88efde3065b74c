// File: content_hash.cc
#include "data/content_hash.h"

#include <algorithm>
#include <cstring>

namespace dflash::data {
namespace {

constexpr uint64_t kMul1 = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kMul2 = 0xc2b2ae3d27d4eb4full;

uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t Mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

void ContentHash::Block(const uint64_t* words) {
  for (int i = 0; i < 4; ++i) {
    lanes_[i] = Rotl(lanes_[i] + words[i] * kMul2, 31) * kMul1;
  }
}

void ContentHash::Update(const void* data, size_t size) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  total_ += size;
  if (pending_size_ > 0) {
    const size_t take = std::min(size, sizeof(pending_) - pending_size_);
    std::memcpy(pending_ + pending_size_, p, take);
    pending_size_ += take;
    p += take;
    size -= take;
    if (pending_size_ < sizeof(pending_)) return;
    uint64_t w[4];
    std::memcpy(w, pending_, sizeof(w));
    Block(w);
    pending_size_ = 0;
  }
  uint64_t w[4];
  while (size >= sizeof(w)) {
    std::memcpy(w, p, sizeof(w));  // unaligned-safe; compiles to plain loads
    Block(w);
    p += sizeof(w);
    size -= sizeof(w);
  }
  std::memcpy(pending_, p, size);
  pending_size_ = size;
}

uint64_t ContentHash::Digest() const {
  uint64_t l[4] = {lanes_[0], lanes_[1], lanes_[2], lanes_[3]};
  // Tail: zero-padded words; the total length below tells paddings apart.
  unsigned char tail[32] = {};
  std::memcpy(tail, pending_, pending_size_);
  for (size_t i = 0; i * 8 < pending_size_; ++i) {
    uint64_t w;
    std::memcpy(&w, tail + 8 * i, 8);
    l[i] = Rotl(l[i] + w * kMul2, 31) * kMul1;
  }
  uint64_t h = total_ * kMul1;
  for (int i = 0; i < 4; ++i) h = Mix(h ^ Rotl(l[i], 7 * i + 1));
  return h;
}

std::string ContentHash::Hex() const {
  static constexpr char kHex[] = "0123456789abcdef";
  const uint64_t d = Digest();
  std::string out = "h64:";
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back(kHex[(d >> shift) & 0xf]);
  return out;
}

}  // namespace dflash::data
