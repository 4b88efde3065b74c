// File: content_hash.h
// A small, fast, deterministic 64-bit content hash for dataset fingerprints
// (not cryptographic). Eight independent multiply-rotate lanes over 8-byte
// little-endian words (64 bytes a step, so the multiplies' latency overlaps:
// memory speed on one core), folded with a splitmix64 finalizer; the result depends
// only on the bytes fed and their order, never on how they were split into
// Update() calls.
//
//   ContentHash h;
//   h.Update(ptr, nbytes);
//   std::string fp = h.Hex();  // "h64:0123456789abcdef"
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dflash::data {

class ContentHash {
 public:
  void Update(const void* data, size_t size);
  void UpdateU64(uint64_t v) { Update(&v, sizeof(v)); }
  uint64_t Digest() const;
  std::string Hex() const;  // "h64:" + 16 lower-case hex digits

 private:
  static constexpr size_t kBlock = 64;
  void Block(const unsigned char* p);  // kBlock bytes

  uint64_t lanes_[8] = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull,
                        0xa4093822299f31d0ull, 0x082efa98ec4e6c89ull,
                        0x452821e638d01377ull, 0xbe5466cf34e90c6cull,
                        0xc0ac29b7c97c50ddull, 0x3f84d5b5b5470917ull};
  unsigned char pending_[kBlock];
  size_t pending_size_ = 0;
  uint64_t total_ = 0;
};

}  // namespace dflash::data
