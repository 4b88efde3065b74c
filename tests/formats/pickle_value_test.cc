// The unpickled value model (formats/pickle_value.h): kind names, container
// depth at birth, dict keys and lookup, and the short descriptions messages
// use.
#include "formats/pickle_value.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pickle_bytes.h"

namespace dflash::formats {
namespace {

// Moved from pickle_reader_test.cc.
TEST(PickleReaderTest, Describe) {
  EXPECT_EQ(DescribePickleValue(*ParseOk(Pk().Int1(1).Stop())), "int");
  EXPECT_EQ(DescribePickleValue(*ParseOk(Pk().Mark().Int1(1).Op('l').Stop())), "list of 1");
  EXPECT_EQ(DescribePickleValue(*ParseOk(Pk().Op('}').Stop())), "dict of 0");
  EXPECT_EQ(DescribePickleValue(*ParseOk(Pk().Global("torch", "LongStorage").Stop())),
            "global torch.LongStorage");
}

TEST(PickleValueTest, DescribeTuplesAndScalars) {
  PickleValuePtr t = MakePickleValue(PickleKind::kTuple);
  t->items = {MakePickleValue(PickleKind::kNone), MakePickleValue(PickleKind::kNone)};
  EXPECT_EQ(DescribePickleValue(*t), "tuple of 2");
  EXPECT_EQ(DescribePickleValue(*MakePickleValue(PickleKind::kTensor)), "tensor");
}

TEST(PickleValueTest, KindNames) {
  const std::pair<PickleKind, const char*> names[] = {
      {PickleKind::kNone, "none"},     {PickleKind::kBool, "bool"},
      {PickleKind::kInt, "int"},       {PickleKind::kFloat, "float"},
      {PickleKind::kString, "str"},    {PickleKind::kBytes, "bytes"},
      {PickleKind::kList, "list"},     {PickleKind::kTuple, "tuple"},
      {PickleKind::kDict, "dict"},     {PickleKind::kStorage, "storage"},
      {PickleKind::kTensor, "tensor"}, {PickleKind::kGlobal, "global"},
  };
  for (const auto& [kind, name] : names) EXPECT_EQ(PickleKindName(kind), name);
}

// Containers start at depth 1 (the unpickler bounds nesting from there).
TEST(PickleValueTest, ContainersStartAtDepthOne) {
  for (PickleKind k : {PickleKind::kList, PickleKind::kTuple, PickleKind::kDict}) {
    EXPECT_EQ(MakePickleValue(k)->depth, 1) << PickleKindName(k);
  }
  for (PickleKind k : {PickleKind::kInt, PickleKind::kString, PickleKind::kTensor}) {
    EXPECT_EQ(MakePickleValue(k)->depth, 0) << PickleKindName(k);
  }
}

// Int and string keys never collide: 7 and "7" are two keys.
TEST(PickleValueTest, DictKeysAndLookup) {
  PickleValuePtr seven = MakePickleValue(PickleKind::kInt);
  seven->integer = 7;
  PickleValuePtr text = MakePickleValue(PickleKind::kString);
  text->str = "7";
  EXPECT_EQ(DictKey(*seven), "i:7");
  EXPECT_EQ(DictKey(*text), "s:7");
  EXPECT_EQ(DictKey(*ParseOk(Pk().Int(-3).Stop())), "i:-3");
  PickleValuePtr d = ParseOk(Pk().Op('}').Str("a").Int1(1).Op('s').Int1(7).Int1(2).Op('s').Stop());
  ASSERT_NE(d->Get("a"), nullptr);
  EXPECT_EQ(d->Get("a")->integer, 1);
  EXPECT_EQ(d->Get("7"), nullptr);
  EXPECT_EQ(d->Get("b"), nullptr);
}

}  // namespace
}  // namespace dflash::formats
