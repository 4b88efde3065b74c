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

inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);  // unaligned-safe; a plain load (little-endian hosts)
  return v;
}

inline uint64_t Step(uint64_t lane, uint64_t word) {
  return Rotl(lane + word * kMul2, 31) * kMul1;
}

}  // namespace

void ContentHash::Block(const unsigned char* p) {
  // Written out so that the eight lanes stay in registers.
  lanes_[0] = Step(lanes_[0], Load64(p));
  lanes_[1] = Step(lanes_[1], Load64(p + 8));
  lanes_[2] = Step(lanes_[2], Load64(p + 16));
  lanes_[3] = Step(lanes_[3], Load64(p + 24));
  lanes_[4] = Step(lanes_[4], Load64(p + 32));
  lanes_[5] = Step(lanes_[5], Load64(p + 40));
  lanes_[6] = Step(lanes_[6], Load64(p + 48));
  lanes_[7] = Step(lanes_[7], Load64(p + 56));
}

void ContentHash::Update(const void* data, size_t size) {
  if (size == 0) return;  // data may be null (an empty tensor)
  const unsigned char* p = static_cast<const unsigned char*>(data);
  total_ += size;
  if (pending_size_ > 0) {
    const size_t take = std::min(size, kBlock - pending_size_);
    std::memcpy(pending_ + pending_size_, p, take);
    pending_size_ += take;
    p += take;
    size -= take;
    if (pending_size_ < kBlock) return;
    Block(pending_);
    pending_size_ = 0;
  }
  // Local copies: the compiler cannot keep members in registers across the
  // loop (the input might alias them).
  uint64_t l0 = lanes_[0], l1 = lanes_[1], l2 = lanes_[2], l3 = lanes_[3];
  uint64_t l4 = lanes_[4], l5 = lanes_[5], l6 = lanes_[6], l7 = lanes_[7];
  for (; size >= kBlock; p += kBlock, size -= kBlock) {
    l0 = Step(l0, Load64(p));
    l1 = Step(l1, Load64(p + 8));
    l2 = Step(l2, Load64(p + 16));
    l3 = Step(l3, Load64(p + 24));
    l4 = Step(l4, Load64(p + 32));
    l5 = Step(l5, Load64(p + 40));
    l6 = Step(l6, Load64(p + 48));
    l7 = Step(l7, Load64(p + 56));
  }
  lanes_[0] = l0, lanes_[1] = l1, lanes_[2] = l2, lanes_[3] = l3;
  lanes_[4] = l4, lanes_[5] = l5, lanes_[6] = l6, lanes_[7] = l7;
  if (size > 0) std::memcpy(pending_, p, size);
  pending_size_ = size;
}

uint64_t ContentHash::Digest() const {
  uint64_t l[8];
  std::memcpy(l, lanes_, sizeof(l));
  // Tail: zero-padded words; the total length below tells paddings apart.
  unsigned char tail[kBlock] = {};
  std::memcpy(tail, pending_, pending_size_);
  for (size_t i = 0; i * 8 < pending_size_; ++i) l[i] = Step(l[i], Load64(tail + 8 * i));
  uint64_t h = total_ * kMul1;
  for (int i = 0; i < 8; ++i) h = Mix(h ^ Rotl(l[i], 7 * i + 1));
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
