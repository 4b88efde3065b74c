// The unpickler's allowlist (formats/pickle_globals.h) called directly: what
// each allowed global builds from its arguments, and each refusal's exact
// message (without the "pickle: " and position the machine adds; those are
// in unpickler_test.cc).
#include "formats/pickle_globals.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::formats {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;

using ::dflash::testing::kInvalid;

PickleValuePtr Int(int64_t v) {
  PickleValuePtr p = MakePickleValue(PickleKind::kInt);
  p->integer = v;
  return p;
}

PickleValuePtr Str(const std::string& s) {
  PickleValuePtr p = MakePickleValue(PickleKind::kString);
  p->str = s;
  return p;
}

PickleValuePtr Tuple(std::vector<PickleValuePtr> items) {
  PickleValuePtr p = MakePickleValue(PickleKind::kTuple);
  p->items = std::move(items);
  return p;
}

PickleValuePtr IntTuple(const std::vector<int64_t>& v) {
  std::vector<PickleValuePtr> items;
  for (int64_t i : v) items.push_back(Int(i));
  return Tuple(std::move(items));
}

PickleValue Global(const std::string& name) {
  PickleValue g;
  g.kind = PickleKind::kGlobal;
  g.str = name;
  if (const AllowedGlobal* a = FindAllowedGlobal(name); a != nullptr && a->storage) {
    g.storage.dtype = a->dtype;
  }
  return g;
}

PickleValuePtr Storage(int64_t numel) {
  PickleValuePtr s = MakePickleValue(PickleKind::kStorage);
  s->storage = {"0", DType::kBF16, "cpu", numel};
  return s;
}

// (storage, offset, size, stride, requires_grad, hooks)
std::vector<PickleValuePtr> RebuildArgs(int64_t offset, const std::vector<int64_t>& size,
                                        const std::vector<int64_t>& stride) {
  return {Storage(12),
          Int(offset),
          IntTuple(size),
          IntTuple(stride),
          MakePickleValue(PickleKind::kBool),
          MakePickleValue(PickleKind::kDict)};
}

TEST(PickleGlobalsTest, AllowlistNamesStoragesWithTheirTypes) {
  const AllowedGlobal* half = FindAllowedGlobal("torch.HalfStorage");
  ASSERT_NE(half, nullptr);
  EXPECT_TRUE(half->storage);
  EXPECT_EQ(half->dtype, DType::kF16);
  const AllowedGlobal* od = FindAllowedGlobal("collections.OrderedDict");
  ASSERT_NE(od, nullptr);
  EXPECT_FALSE(od->storage);
  for (const char* refused : {"os.system", "builtins.eval", "torch.ComplexFloatStorage",
                              "collections.OrderedDictX", "torch.FloatStorag", ""}) {
    EXPECT_EQ(FindAllowedGlobal(refused), nullptr) << refused;
  }
  // The refusal's list is the table: every name in it is found.
  const std::vector<std::string> names = absl::StrSplit(AllowedGlobalsText(), ", ");
  EXPECT_EQ(names.size(), 14u);
  for (const std::string& n : names) EXPECT_NE(FindAllowedGlobal(n), nullptr) << n;
  EXPECT_EQ(names[0], "collections.OrderedDict");
}

TEST(PickleGlobalsTest, OrderedDictAndParameters) {
  ASSERT_OK_AND_ASSIGN(PickleValuePtr d, CallAllowedGlobal(Global("collections.OrderedDict"), {}));
  EXPECT_EQ(d->kind, PickleKind::kDict);
  EXPECT_TRUE(d->ordered_dict);
  EXPECT_THAT(
      CallAllowedGlobal(Global("collections.OrderedDict"), {Int(1)}),
      StatusIs(kInvalid,
               Eq(std::string("collections.OrderedDict with 1 arguments is not supported"))));
  PickleValuePtr t = MakePickleValue(PickleKind::kTensor);
  const PickleValuePtr no = MakePickleValue(PickleKind::kBool);
  ASSERT_OK_AND_ASSIGN(PickleValuePtr p,
                       CallAllowedGlobal(Global("torch._utils._rebuild_parameter"), {t, no, no}));
  EXPECT_EQ(p, t);  // a parameter is its tensor
  ASSERT_OK_AND_ASSIGN(
      p, CallAllowedGlobal(Global("torch._utils._rebuild_parameter_with_state"), {t, no, no, no}));
  EXPECT_EQ(p, t);
  EXPECT_THAT(CallAllowedGlobal(Global("torch._utils._rebuild_parameter_with_state"), {t, no, no}),
              StatusIs(kInvalid, Eq(std::string("torch._utils._rebuild_parameter_with_state "
                                                "expects (tensor, ...) with 4 arguments; got 3"))));
  EXPECT_THAT(CallAllowedGlobal(Global("torch._utils._rebuild_parameter"), {no, no, no}),
              StatusIs(kInvalid, Eq(std::string("torch._utils._rebuild_parameter expects "
                                                "(tensor, ...) with 3 arguments; got 3"))));
  EXPECT_THAT(CallAllowedGlobal(Global("torch.LongStorage"), {}),
              StatusIs(kInvalid, Eq(std::string("'torch.LongStorage' cannot be called"))));
}

TEST(PickleGlobalsTest, RebuildTensor) {
  const PickleValue fn = Global("torch._utils._rebuild_tensor_v2");
  ASSERT_OK_AND_ASSIGN(PickleValuePtr t, CallAllowedGlobal(fn, RebuildArgs(2, {2, 5}, {5, 1})));
  ASSERT_EQ(t->kind, PickleKind::kTensor);
  EXPECT_EQ(t->tensor.storage.dtype, DType::kBF16);
  EXPECT_EQ(t->tensor.storage.numel, 12);
  EXPECT_EQ(t->tensor.storage_offset, 2);
  EXPECT_THAT(t->tensor.size, ElementsAre(2, 5));
  EXPECT_THAT(t->tensor.stride, ElementsAre(5, 1));
  std::vector<PickleValuePtr> seven = RebuildArgs(0, {}, {});
  seven.push_back(MakePickleValue(PickleKind::kNone));  // metadata
  EXPECT_THAT(CallAllowedGlobal(fn, seven), ::dflash::testing::IsOk());

  auto refused = [&](const std::vector<PickleValuePtr>& args, const std::string& message) {
    EXPECT_THAT(CallAllowedGlobal(fn, args), StatusIs(kInvalid, Eq(message)));
  };
  refused({Storage(1)}, "_rebuild_tensor_v2 takes 6 or 7 arguments; got 1");
  std::vector<PickleValuePtr> bad = RebuildArgs(0, {1}, {1});
  bad[2] = Tuple({Str("1")});
  refused(bad,
          "_rebuild_tensor_v2 expects (storage, int, tuple of int, tuple of int, ...); got "
          "(storage, int, tuple, tuple, ...)");
  bad = RebuildArgs(0, {1}, {1});
  bad[0] = Int(0);
  refused(bad,
          "_rebuild_tensor_v2 expects (storage, int, tuple of int, tuple of int, ...); got (int, "
          "int, tuple, tuple, ...)");
  refused(RebuildArgs(0, {1, 2}, {1}), "tensor has 2 sizes and 1 strides");
  refused(RebuildArgs(0, std::vector<int64_t>(65, 1), std::vector<int64_t>(65, 1)),
          "tensor has 65 sizes and 65 strides");
  refused(RebuildArgs(0, {2, 3}, {-1, 1}), "tensor has negative size or stride 2, -1");
  refused(RebuildArgs(-1, {1}, {1}), "tensor has a negative offset");
}

TEST(PickleGlobalsTest, StorageFromPersistentId) {
  PickleValuePtr cls = MakePickleValue(PickleKind::kGlobal);
  *cls = Global("torch.LongStorage");
  ASSERT_OK_AND_ASSIGN(
      PickleValuePtr s,
      StorageFromPersistentId(*Tuple({Str("storage"), cls, Str("3"), Str("cuda:0"), Int(8)})));
  EXPECT_EQ(s->kind, PickleKind::kStorage);
  EXPECT_EQ(s->storage.key, "3");
  EXPECT_EQ(s->storage.dtype, DType::kI64);
  EXPECT_EQ(s->storage.location, "cuda:0");
  EXPECT_EQ(s->storage.numel, 8);

  PickleValuePtr od = MakePickleValue(PickleKind::kGlobal);
  *od = Global("collections.OrderedDict");
  const std::string message =
      "persistent id is not ('storage', torch.<Type>Storage, key, location, numel)";
  for (const PickleValuePtr& pid : {
           Tuple({Str("storage"), cls, Str("3"), Str("cpu")}),
           Tuple({Str("module"), cls, Str("3"), Str("cpu"), Int(8)}),
           Tuple({Str("storage"), od, Str("3"), Str("cpu"), Int(8)}),
           Tuple({Str("storage"), cls, Int(3), Str("cpu"), Int(8)}),
           Tuple({Str("storage"), cls, Str("3"), Str("cpu"), Int(-1)}),
           Str("storage"),
       }) {
    EXPECT_THAT(StorageFromPersistentId(*pid), StatusIs(kInvalid, Eq(message)))
        << DescribePickleValue(*pid);
  }
}

}  // namespace
}  // namespace dflash::formats
