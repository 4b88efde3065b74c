// The restricted unpickler's machine (formats/unpickler.h): bounded reads,
// the stack and marks, containers, the memo, the limits, and the globals,
// REDUCE, BUILD and persistent ids as the machine reports them ("pickle: ",
// the opcode and its byte). Moved from pickle_reader_test.cc, names
// unchanged; the opcode table's own cases stay there.
#include "formats/unpickler.h"

#include <string>

#include "formats/pickle_globals.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pickle_bytes.h"
#include "test_util/status_matchers.h"

namespace dflash::formats {
namespace {

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

// The whole message of each kind of error: what, the opcode and its byte.
TEST(PickleReaderErrorTest, ExactMessagesNameTheOpcodeAndItsByte) {
  auto exact = [](const Pk& p, const std::string& message) {
    EXPECT_THAT(ParseStatus(p), ::dflash::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                                            ::testing::Eq(message)));
  };
  exact(Pk().Op('J').U8(1).U8(2),
        "pickle: truncated at byte 5 (reading int32 for opcode 0x4a at byte 2)");
  exact(Pk().Op('c').Raw("collections"),
        "pickle: truncated at byte 14 (reading global module for opcode 0x63 at byte 2)");
  exact(Pk().Global("collections", std::string(257, 'x')),
        "pickle: global name is too long (opcode 0x63 at byte 2)");
  exact(Pk().Int1(1).Op('a').Stop(), "pickle: stack underflow (opcode 0x61 at byte 4)");
  exact(Pk().Op(']').Put(0).Op(']').Get(0).Op('a').Get(0).None().Op('a').Stop(),
        "pickle: a list is modified after being placed in another value (recursive structures "
        "are not supported) (opcode 0x61 at byte 12)");
  exact(Pk().Op('}').Mark().Str("a").Op('u').Stop(),
        "pickle: odd number of items for a dict (opcode 0x75 at byte 10)");
  exact(Pk().Op('}').None().None().Op('s').Stop(),
        "pickle: dict key must be a str or an int; got none (opcode 0x73 at byte 5)");
  exact(Pk().Op(']').Op('}').Op('b').Stop(),
        "pickle: BUILD is only supported on an OrderedDict with a dict state; got list and dict "
        "(opcode 0x62 at byte 4)");
  exact(Pk().Global("torch", "FloatStorage").Op(')').Op('R').Stop(),
        "pickle: 'torch.FloatStorage' cannot be called (opcode 0x52 at byte 23)");
  exact(Pk().Global("os", "system").Stop(), "pickle: global 'os.system' is not allowed (allowed: " +
                                                AllowedGlobalsText() + ") at byte 2");
}

// BUILD with a None state is what state_dict() may pickle: accepted, dropped.
TEST(PickleReaderErrorTest, BuildOnAnOrderedDictAcceptsNoneState) {
  PickleValuePtr v =
      ParseOk(Pk().Global("collections", "OrderedDict").Op(')').Op('R').None().Op('b').Stop());
  EXPECT_EQ(v->kind, PickleKind::kDict);
  EXPECT_TRUE(v->ordered_dict);
}

}  // namespace
}  // namespace dflash::formats
