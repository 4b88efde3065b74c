// ParsePickle's opcode table (Unpickler::Step, pickle_reader.cc): each
// opcode family and the values it yields. The machine's errors (reads,
// stack, containers, memo, limits, globals) are in unpickler_test.cc.
#include "formats/pickle_reader.h"

#include <cstring>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pickle_bytes.h"
#include "test_util/status_matchers.h"

namespace dflash::formats {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::HasSubstr;

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

TEST(PickleReaderTest, TrailingBytesAfterStopAreIgnored) {
  EXPECT_EQ(ParseOk(Pk().Int1(5).Stop().Raw("junk"))->integer, 5);
}

// ---- errors of the opcode table ----

TEST(PickleReaderErrorTest, UnknownOpcode) {
  ExpectInvalid(Pk().Op(0xff), "pickle: unknown or unsupported opcode 0xff at byte 2");
  ExpectInvalid(Pk().Int1(1).Op('i'), "opcode 0x69 at byte 4");  // INST
}

}  // namespace
}  // namespace dflash::formats
