// File: wire_bytes.h
// Protobuf wire-format pieces written by hand, for requests a typed stub
// cannot send (a field with the wrong wire type, truncated bytes, a varint
// too large for its field).
#pragma once

#include <cstdint>
#include <string>

namespace dflash::testing {

inline std::string Varint(uint64_t v) {
  std::string out;
  do {
    uint8_t b = v & 0x7F;
    v >>= 7;
    if (v != 0) b |= 0x80;
    out.push_back(static_cast<char>(b));
  } while (v != 0);
  return out;
}
inline std::string Tag(int field, int wire) {
  return Varint((static_cast<uint64_t>(field) << 3) | wire);
}
inline std::string VarintField(int field, uint64_t v) {
  return Tag(field, 0) + Varint(v);
}
inline std::string LenField(int field, const std::string& body) {
  return Tag(field, 2) + Varint(body.size()) + body;
}

}  // namespace dflash::testing
