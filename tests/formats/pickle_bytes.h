// File: pickle_bytes.h
// Test helper for the formats/ pickle tests: pickle bytes built opcode by
// opcode (Pk), and ParsePickle run on them.
//
//   ExpectInvalid(Pk().Op('a').Stop(), "pickle: stack underflow");
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/pickle_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::formats {

// Builds pickle bytes opcode by opcode (string literals with \x escapes
// swallow following hex letters, so we do not use them).
class Pk {
 public:
  Pk() { Op(0x80).U8(2); }  // PROTO 2
  static Pk Bare() { return Pk(0); }
  Pk& Op(uint8_t op) { return U8(op); }
  Pk& U8(uint8_t v) {
    b_.push_back(static_cast<char>(v));
    return *this;
  }
  Pk& LE(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) U8(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Pk& Raw(const std::string& s) {
    b_ += s;
    return *this;
  }
  Pk& Mark() { return Op('('); }
  Pk& Str(const std::string& s) { return Op('X').LE(s.size(), 4).Raw(s); }
  Pk& Int(int32_t v) { return Op('J').LE(static_cast<uint32_t>(v), 4); }
  Pk& Int1(uint8_t v) { return Op('K').U8(v); }
  Pk& None() { return Op('N'); }
  Pk& Global(const std::string& module, const std::string& name) {
    return Op('c').Raw(module + "\n" + name + "\n");
  }
  Pk& Put(uint8_t i) { return Op('q').U8(i); }
  Pk& Get(uint8_t i) { return Op('h').U8(i); }
  Pk& Stop() { return Op('.'); }
  // ('storage', torch.<type>, key, 'cpu', numel) BINPERSID
  Pk& Storage(const std::string& type, const std::string& key, int numel) {
    return Mark()
        .Str("storage")
        .Global("torch", type)
        .Str(key)
        .Str("cpu")
        .Int(numel)
        .Op('t')
        .Op('Q');
  }
  // _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())
  Pk& Tensor(const std::string& type, const std::string& key, int numel, int offset,
             std::vector<int> size, std::vector<int> stride) {
    Global("torch._utils", "_rebuild_tensor_v2").Mark().Storage(type, key, numel);
    Int(offset).Mark();
    for (int s : size) Int(s);
    Op('t').Mark();
    for (int s : stride) Int(s);
    Op('t').Op(0x89).Global("collections", "OrderedDict").Op(')').Op('R');
    return Op('t').Op('R');
  }
  const std::string& bytes() const { return b_; }

 private:
  explicit Pk(int) {}
  std::string b_;
};

inline PickleValuePtr ParseOk(const Pk& p, const PickleLimits& limits = {}) {
  auto r = ParsePickle(p.bytes(), limits);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : std::make_shared<PickleValue>();
}

inline absl::Status ParseStatus(const Pk& p, const PickleLimits& limits = {}) {
  return ParsePickle(p.bytes(), limits).status();
}

// InvalidArgument with a message containing `substr`.
inline void ExpectInvalid(const Pk& p, const std::string& substr, const PickleLimits& limits = {}) {
  EXPECT_THAT(ParseStatus(p, limits),
              ::dflash::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                          ::testing::HasSubstr(substr)));
}

}  // namespace dflash::formats
