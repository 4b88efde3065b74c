#include "formats/pickle_reader.h"

#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::formats {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::HasSubstr;

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

PickleValuePtr ParseOk(const Pk& p, const PickleLimits& limits = {}) {
  auto r = ParsePickle(p.bytes(), limits);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : std::make_shared<PickleValue>();
}

absl::Status ParseStatus(const Pk& p, const PickleLimits& limits = {}) {
  return ParsePickle(p.bytes(), limits).status();
}

// ---- scalars ----

TEST(PickleReaderTest, Scalars) {
  EXPECT_EQ(ParseOk(Pk().None().Stop())->kind, PickleKind::kNone);
  EXPECT_TRUE(ParseOk(Pk().Op(0x88).Stop())->boolean);
  auto f = ParseOk(Pk().Op(0x89).Stop());
  EXPECT_EQ(f->kind, PickleKind::kBool);
  EXPECT_FALSE(f->boolean);
  EXPECT_EQ(ParseOk(Pk().Int(-123456).Stop())->integer, -123456);
  EXPECT_EQ(ParseOk(Pk().Int1(250).Stop())->integer, 250);
  EXPECT_EQ(ParseOk(Pk().Op('M').LE(65535, 2).Stop())->integer, 65535);
}

TEST(PickleReaderTest, Long1) {
  EXPECT_EQ(ParseOk(Pk().Op(0x8a).U8(0).Stop())->integer, 0);
  EXPECT_EQ(ParseOk(Pk().Op(0x8a).U8(1).U8(0xff).Stop())->integer, -1);
  EXPECT_EQ(ParseOk(Pk().Op(0x8a).U8(2).LE(0x8000, 2).Stop())->integer, -32768);
  EXPECT_EQ(ParseOk(Pk().Op(0x8a).U8(6).LE(int64_t{1} << 40, 6).Stop())->integer, int64_t{1} << 40);
  EXPECT_EQ(ParseOk(Pk().Op(0x8a).U8(8).LE(0x8000000000000000ull, 8).Stop())->integer, INT64_MIN);
  EXPECT_THAT(ParseStatus(Pk().Op(0x8a).U8(9).LE(1, 8).U8(0).Stop()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("pickle: integer of 9 bytes is too large")));
}

TEST(PickleReaderTest, BinFloatIsBigEndian) {
  double d = -2.5;
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  Pk p;
  p.Op('G');
  for (int i = 7; i >= 0; --i) p.U8(static_cast<uint8_t>(bits >> (8 * i)));
  auto v = ParseOk(p.Stop());
  EXPECT_EQ(v->kind, PickleKind::kFloat);
  EXPECT_EQ(v->real, -2.5);
}

TEST(PickleReaderTest, StringsAndBytes) {
  auto s = ParseOk(Pk().Str("héllo").Stop());
  EXPECT_EQ(s->kind, PickleKind::kString);
  EXPECT_EQ(s->str, "héllo");
  EXPECT_EQ(ParseOk(Pk().Op(0x8c).U8(2).Raw("ab").Stop())->str, "ab");
  EXPECT_EQ(ParseOk(Pk().Op(0x8d).LE(3, 8).Raw("abc").Stop())->str, "abc");
  auto b = ParseOk(Pk().Op('C').U8(2).U8(0).U8(1).Stop());
  EXPECT_EQ(b->kind, PickleKind::kBytes);
  EXPECT_EQ(b->str, std::string("\0\1", 2));
  EXPECT_EQ(ParseOk(Pk().Op('B').LE(1, 4).Raw("z").Stop())->str, "z");
  EXPECT_EQ(ParseOk(Pk().Op(0x8e).LE(1, 8).Raw("y").Stop())->kind, PickleKind::kBytes);
}

// ---- containers ----

TEST(PickleReaderTest, Lists) {
  auto v = ParseOk(Pk().Op(']').Int1(1).Op('a').Mark().Int1(2).Int1(3).Op('e').Stop());
  ASSERT_EQ(v->kind, PickleKind::kList);
  ASSERT_EQ(v->items.size(), 3u);
  EXPECT_EQ(v->items[2]->integer, 3);
  EXPECT_EQ(v->depth, 1);
  auto l = ParseOk(Pk().Mark().Int1(4).None().Op('l').Stop());
  ASSERT_EQ(l->items.size(), 2u);
  EXPECT_EQ(l->items[1]->kind, PickleKind::kNone);
}

TEST(PickleReaderTest, Tuples) {
  EXPECT_EQ(ParseOk(Pk().Op(')').Stop())->kind, PickleKind::kTuple);
  for (int n = 1; n <= 3; ++n) {
    Pk p;
    for (int i = 0; i < n; ++i) p.Int1(i);
    auto v = ParseOk(p.Op(0x84 + n).Stop());
    ASSERT_EQ(v->kind, PickleKind::kTuple);
    ASSERT_EQ(v->items.size(), static_cast<size_t>(n));
    EXPECT_EQ(v->items.back()->integer, n - 1);
  }
  auto t = ParseOk(Pk().Mark().Int1(1).Op(')').Op(0x85).Op('t').Stop());
  ASSERT_EQ(t->items.size(), 2u);
  EXPECT_EQ(t->depth, 3);  // (1, ((),))
}

TEST(PickleReaderTest, Dicts) {
  auto d = ParseOk(Pk().Op('}')
                       .Str("a")
                       .Int1(1)
                       .Op('s')
                       .Mark()
                       .Int1(7)
                       .Str("seven")
                       .Str("a")
                       .Int1(2)
                       .Op('u')
                       .Stop());
  ASSERT_EQ(d->kind, PickleKind::kDict);
  ASSERT_EQ(d->dict.size(), 2u);  // "a" replaced in place: last one wins
  EXPECT_EQ(d->dict[0].first->str, "a");
  EXPECT_EQ(d->dict[0].second->integer, 2);
  EXPECT_EQ(d->dict[1].first->integer, 7);
  ASSERT_NE(d->Get("a"), nullptr);
  EXPECT_EQ(d->Get("a")->integer, 2);
  EXPECT_EQ(d->Get("7"), nullptr);  // int key, not the string "7"
  EXPECT_FALSE(d->ordered_dict);
  auto d2 = ParseOk(Pk().Mark().Str("x").None().Op('d').Stop());
  ASSERT_EQ(d2->dict.size(), 1u);
}

TEST(PickleReaderTest, MemoSharesValues) {
  auto v = ParseOk(Pk().Op(']')
                       .Put(0)
                       .Op(']')
                       .Op('r')
                       .LE(70000, 4)
                       .Mark()
                       .Get(0)
                       .Op('j')
                       .LE(70000, 4)
                       .Op('t')
                       .Stop());
  ASSERT_EQ(v->items.size(), 2u);
  EXPECT_EQ(v->items[0]->kind, PickleKind::kList);
  auto m = ParseOk(Pk().Str("s").Op(0x94).Str("t").Op(0x94).Get(1).Get(0).Op(0x86).Stop());
  EXPECT_EQ(m->items[0]->str, "t");
  EXPECT_EQ(m->items[1]->str, "s");
  auto same = ParseOk(Pk().Op(')').Put(3).Get(3).Op(0x86).Stop());
  EXPECT_EQ(same->items[0].get(), same->items[1].get());
}

TEST(PickleReaderTest, StackOps) {
  // POP drops 1; POP_MARK drops (2, 3); DUP copies 4.
  auto v = ParseOk(
      Pk().Int1(9).Int1(1).Op('0').Mark().Int1(2).Int1(3).Op('1').Int1(4).Op('2').Op(0x87).Stop());
  ASSERT_EQ(v->items.size(), 3u);
  EXPECT_EQ(v->items[0]->integer, 9);
  EXPECT_EQ(v->items[2]->integer, 4);
}

TEST(PickleReaderTest, FrameAndStackGlobalProtocol4) {
  Pk p = Pk::Bare();
  p.Op(0x80)
      .U8(4)
      .Op(0x95)
      .LE(100, 8)
      .Op(0x8c)
      .U8(11)
      .Raw("collections")
      .Op(0x94)
      .Op(0x8c)
      .U8(11)
      .Raw("OrderedDict")
      .Op(0x94)
      .Op(0x93)
      .Op(0x94)
      .Op(')')
      .Op('R')
      .Op(0x94)
      .Stop();
  auto v = ParseOk(p);
  EXPECT_EQ(v->kind, PickleKind::kDict);
  EXPECT_TRUE(v->ordered_dict);
}

TEST(PickleReaderTest, OrderedDictWithBuildState) {
  // As state_dict() pickles: items, then its _metadata attribute via BUILD.
  auto v = ParseOk(Pk().Global("collections", "OrderedDict")
                       .Put(0)
                       .Op(')')
                       .Op('R')
                       .Mark()
                       .Str("w")
                       .Int1(1)
                       .Op('u')
                       .Op('}')
                       .Str("_metadata")
                       .Get(0)
                       .Op(')')
                       .Op('R')
                       .Op('s')
                       .Op('b')
                       .Stop());
  ASSERT_EQ(v->kind, PickleKind::kDict);
  EXPECT_TRUE(v->ordered_dict);
  ASSERT_EQ(v->dict.size(), 1u);
  EXPECT_EQ(v->dict[0].first->str, "w");
}

TEST(PickleReaderTest, TensorReference) {
  auto v = ParseOk(
      Pk().Op('}').Str("t").Tensor("BFloat16Storage", "3", 24, 2, {2, 3}, {1, 4}).Op('s').Stop());
  const PickleValue* t = v->Get("t");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->kind, PickleKind::kTensor);
  EXPECT_EQ(t->tensor.storage.key, "3");
  EXPECT_EQ(t->tensor.storage.dtype, DType::kBF16);
  EXPECT_EQ(t->tensor.storage.location, "cpu");
  EXPECT_EQ(t->tensor.storage.numel, 24);
  EXPECT_EQ(t->tensor.storage_offset, 2);
  EXPECT_EQ(t->tensor.size, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t->tensor.stride, (std::vector<int64_t>{1, 4}));
}

TEST(PickleReaderTest, EveryStorageClass) {
  const std::pair<const char*, DType> kTypes[] = {
      {"FloatStorage", DType::kF32}, {"DoubleStorage", DType::kF64},
      {"HalfStorage", DType::kF16},  {"BFloat16Storage", DType::kBF16},
      {"LongStorage", DType::kI64},  {"IntStorage", DType::kI32},
      {"ShortStorage", DType::kI16}, {"CharStorage", DType::kI8},
      {"ByteStorage", DType::kU8},   {"BoolStorage", DType::kBool}};
  for (const auto& [name, dtype] : kTypes) {
    auto v = ParseOk(Pk().Tensor(name, "0", 1, 0, {1}, {1}).Stop());
    EXPECT_EQ(v->tensor.storage.dtype, dtype) << name;
  }
}

TEST(PickleReaderTest, Parameters) {
  auto p = ParseOk(Pk().Global("torch._utils", "_rebuild_parameter")
                       .Mark()
                       .Tensor("FloatStorage", "0", 4, 0, {4}, {1})
                       .Op(0x88)
                       .Global("collections", "OrderedDict")
                       .Op(')')
                       .Op('R')
                       .Op('t')
                       .Op('R')
                       .Stop());
  EXPECT_EQ(p->kind, PickleKind::kTensor);
  auto s = ParseOk(Pk().Global("torch._utils", "_rebuild_parameter_with_state")
                       .Mark()
                       .Tensor("FloatStorage", "0", 4, 0, {4}, {1})
                       .Op(0x88)
                       .Global("collections", "OrderedDict")
                       .Op(')')
                       .Op('R')
                       .Op('}')
                       .Op('t')
                       .Op('R')
                       .Stop());
  EXPECT_EQ(s->kind, PickleKind::kTensor);
}

TEST(PickleReaderTest, Describe) {
  EXPECT_EQ(DescribePickleValue(*ParseOk(Pk().Int1(1).Stop())), "int");
  EXPECT_EQ(DescribePickleValue(*ParseOk(Pk().Mark().Int1(1).Op('l').Stop())), "list of 1");
  EXPECT_EQ(DescribePickleValue(*ParseOk(Pk().Op('}').Stop())), "dict of 0");
  EXPECT_EQ(DescribePickleValue(*ParseOk(Pk().Global("torch", "LongStorage").Stop())),
            "global torch.LongStorage");
}

TEST(PickleReaderTest, TrailingBytesAfterStopAreIgnored) {
  EXPECT_EQ(ParseOk(Pk().Int1(5).Stop().Raw("junk"))->integer, 5);
}

// ---- errors ----

void ExpectInvalid(const Pk& p, const std::string& substr, const PickleLimits& limits = {}) {
  EXPECT_THAT(ParseStatus(p, limits),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(substr)));
}

TEST(PickleReaderErrorTest, UnknownOpcode) {
  ExpectInvalid(Pk().Op(0xff), "pickle: unknown or unsupported opcode 0xff at byte 2");
  ExpectInvalid(Pk().Int1(1).Op('i'), "opcode 0x69 at byte 4");  // INST
}

TEST(PickleReaderErrorTest, Truncated) {
  ExpectInvalid(Pk().Op('J').U8(1).U8(2), "pickle: truncated at byte 5");
  ExpectInvalid(Pk().Op('X').LE(1000, 4).Raw("abc"), "pickle: truncated at byte 10");
  ExpectInvalid(Pk().Op(0x8d).LE(~uint64_t{0}, 8), "pickle: truncated at byte 11");
  ExpectInvalid(Pk().Op(0x8a).U8(4).U8(1), "pickle: truncated at byte 5");
  ExpectInvalid(Pk().Int1(1), "pickle: truncated at byte 4 (no STOP opcode)");
  ExpectInvalid(Pk::Bare(), "pickle: truncated at byte 0");
  ExpectInvalid(Pk().Op('c').Raw("collections"), "pickle: truncated at byte 14");
}

TEST(PickleReaderErrorTest, DisallowedGlobals) {
  ExpectInvalid(Pk().Global("os", "system").Stop(),
                "pickle: global 'os.system' is not allowed (allowed: "
                "collections.OrderedDict, torch._utils._rebuild_tensor_v2");
  ExpectInvalid(Pk().Op(0x8c).U8(8).Raw("builtins").Op(0x8c).U8(4).Raw("eval").Op(0x93).Stop(),
                "pickle: global 'builtins.eval' is not allowed");
  ExpectInvalid(Pk().Global("torch", "ComplexFloatStorage").Stop(),
                "global 'torch.ComplexFloatStorage' is not allowed");
  ExpectInvalid(Pk().Global("collections", std::string(300, 'x')), "global name is too long");
}

TEST(PickleReaderErrorTest, TooDeep) {
  Pk p;
  p.Op(')');
  for (int i = 0; i < 1001; ++i) p.Op(0x85);
  ExpectInvalid(p.Stop(), "pickle: nesting deeper than 1000");
  PickleLimits small;
  small.max_depth = 2;
  ExpectInvalid(Pk().Op(']').Op(']').Op(']').Op('a').Op('a').Stop(), "nesting deeper than 2",
                small);
  EXPECT_EQ(ParseOk(Pk().Op(']').Op(']').Op('a').Stop(), small)->depth, 2);
}

TEST(PickleReaderErrorTest, MissingMemoEntry) {
  ExpectInvalid(Pk().Get(5).Stop(), "pickle: memo has no entry 5 (opcode 0x68 at byte 2)");
  ExpectInvalid(Pk().Op('j').LE(99999, 4).Stop(), "memo has no entry 99999");
  ExpectInvalid(Pk().Put(0).Stop(), "stack underflow (opcode 0x71");
}

TEST(PickleReaderErrorTest, StackUnderflowAndMissingMark) {
  ExpectInvalid(Pk().Op('a').Stop(), "pickle: stack underflow (opcode 0x61 at byte 2)");
  ExpectInvalid(Pk().Int1(1).Op(0x86).Stop(), "stack underflow (opcode 0x86");
  ExpectInvalid(Pk().Stop(), "stack underflow (opcode 0x2e");
  ExpectInvalid(Pk().Int1(1).Op('t').Stop(), "pickle: MARK missing (opcode 0x74 at byte 4)");
  ExpectInvalid(Pk().Op('}').Op('u').Stop(), "MARK missing (opcode 0x75");
  ExpectInvalid(Pk().Op(']').Op('e').Stop(), "MARK missing (opcode 0x65");
  ExpectInvalid(Pk().Op('1').Stop(), "MARK missing (opcode 0x31");
  // Values below a MARK are out of reach until the mark is closed.
  ExpectInvalid(Pk().Int1(1).Mark().Op('0').Stop(), "stack underflow (opcode 0x30");
}

TEST(PickleReaderErrorTest, RecursiveStructures) {
  ExpectInvalid(Pk().Op(']').Put(0).Get(0).Op('a').Stop(),
                "a list is modified after being placed in another value");
  ExpectInvalid(Pk().Op(']').Put(0).Op(']').Get(0).Op('a').Get(0).None().Op('a').Stop(),
                "recursive structures are not supported");
  ExpectInvalid(Pk().Op('}').Put(0).Str("k").Get(0).Op('s').Stop(),
                "a dict is modified after being placed in another value");
}

TEST(PickleReaderErrorTest, BadContainerUse) {
  ExpectInvalid(Pk().Op('}').None().None().Op('s').Stop(),
                "dict key must be a str or an int; got none");
  ExpectInvalid(Pk().Op(']').None().None().Op('s').Stop(), "SETITEM on a list");
  ExpectInvalid(Pk().Op('}').None().Op('a').Stop(), "APPEND to a dict");
  ExpectInvalid(Pk().Op('}').Mark().Str("a").Op('u').Stop(), "odd number of items");
}

TEST(PickleReaderErrorTest, Limits) {
  PickleLimits l;
  l.max_container_size = 2;
  ExpectInvalid(Pk().Mark().Int1(1).Int1(2).Int1(3).Op('l').Stop(),
                "container with more than 2 items", l);
  ExpectInvalid(Pk().Op(']').Mark().Int1(1).Int1(2).Int1(3).Op('e').Stop(),
                "container with more than 2 items", l);
  ExpectInvalid(Pk().Op('}').Mark().Int1(1).Int1(2).Int1(3).Int1(4).Int1(5).Int1(6).Op('u').Stop(),
                "container with more than 2 items", l);
  PickleLimits m;
  m.max_memo_size = 1;
  ExpectInvalid(Pk().Int1(1).Put(0).Put(1).Stop(), "memo larger than 1", m);
  EXPECT_EQ(ParseOk(Pk().Int1(1).Put(0).Put(0).Stop(), m)->integer, 1);
  PickleLimits s;
  s.max_stack_size = 3;
  ExpectInvalid(Pk().Int1(1).Int1(2).Mark().Int1(3).Stop(), "stack deeper than 3", s);
}

TEST(PickleReaderErrorTest, BadCalls) {
  ExpectInvalid(Pk().Int1(1).Op(')').Op('R').Stop(),
                "REDUCE expects a global and a tuple; got int and tuple");
  ExpectInvalid(Pk().Global("torch", "FloatStorage").Op(')').Op('R').Stop(),
                "'torch.FloatStorage' cannot be called");
  ExpectInvalid(Pk().Global("collections", "OrderedDict").Op(']').Op(0x85).Op('R').Stop(),
                "collections.OrderedDict with 1 arguments is not supported");
  ExpectInvalid(Pk().Global("torch._utils", "_rebuild_tensor_v2").Op(')').Op('R').Stop(),
                "_rebuild_tensor_v2 takes 6 or 7 arguments; got 0");
  ExpectInvalid(Pk().Tensor("FloatStorage", "0", 4, 0, {-1}, {1}).Stop(),
                "negative size or stride");
  ExpectInvalid(Pk().Tensor("FloatStorage", "0", 4, 0, {1, 2}, {1}).Stop(),
                "tensor has 2 sizes and 1 strides");
  ExpectInvalid(Pk().Global("torch._utils", "_rebuild_parameter").Int1(1).Op(0x85).Op('R').Stop(),
                "torch._utils._rebuild_parameter expects (tensor, ...) with 3 arguments");
  ExpectInvalid(Pk().Op(']').Op('}').Op('b').Stop(), "BUILD is only supported on an OrderedDict");
  ExpectInvalid(Pk().Str("storage").Op(0x85).Op('Q').Stop(),
                "persistent id is not ('storage', torch.<Type>Storage");
  ExpectInvalid(Pk().Mark()
                    .Str("storage")
                    .Global("collections", "OrderedDict")
                    .Str("0")
                    .Str("cpu")
                    .Int1(1)
                    .Op('t')
                    .Op('Q')
                    .Stop(),
                "persistent id is not");
  ExpectInvalid(Pk::Bare().Op(0x80).U8(6).Stop(), "unsupported protocol 6");
}

}  // namespace
}  // namespace dflash::formats
