// Flattening an unpickled data.pkl into named tensors (formats/pickle_flatten.h)
// on hand-built value trees: names joined with '.', what is skipped and why,
// the training wrappers, and each refusal with its exact message.
#include "formats/pickle_flatten.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::formats {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;

using ::dflash::testing::kInvalid;

// A tensor over storage "0" of `numel` F32 elements.
PickleValuePtr T(std::vector<int64_t> size, std::vector<int64_t> stride, int64_t offset = 0,
                 int64_t numel = 1 << 20) {
  PickleValuePtr t = MakePickleValue(PickleKind::kTensor);
  t->tensor.storage = {"0", DType::kF32, "cpu", numel};
  t->tensor.storage_offset = offset;
  t->tensor.size = std::move(size);
  t->tensor.stride = std::move(stride);
  return t;
}

PickleValuePtr Scalar(int64_t v) {
  PickleValuePtr p = MakePickleValue(PickleKind::kInt);
  p->integer = v;
  return p;
}

// A dict in this order; keys are strings, or ints when `int_keys`.
PickleValuePtr Dict(std::vector<std::pair<std::string, PickleValuePtr>> entries,
                    bool int_keys = false) {
  PickleValuePtr d = MakePickleValue(PickleKind::kDict);
  for (auto& [k, v] : entries) {
    PickleValuePtr key = int_keys ? Scalar(std::stoll(k)) : MakePickleValue(PickleKind::kString);
    if (!int_keys) key->str = k;
    d->key_index[DictKey(*key)] = d->dict.size();
    d->dict.emplace_back(std::move(key), std::move(v));
  }
  return d;
}

PickleValuePtr List(std::vector<PickleValuePtr> items) {
  PickleValuePtr l = MakePickleValue(PickleKind::kList);
  l->items = std::move(items);
  return l;
}

std::vector<std::string> Names(const FlatCheckpoint& flat) {
  std::vector<std::string> names;
  for (const FlatTensor& t : flat.tensors) names.push_back(t.name);
  return names;
}

TEST(PickleFlattenTest, NamesJoinWithDotsAndNonTensorsAreListed) {
  PickleValuePtr root = Dict({
      {"model", Dict({{"fc.weight", T({2, 3}, {3, 1})}})},
      {"layers", List({T({4}, {1}), T({}, {})})},
      {"by_id", Dict({{"7", T({1}, {1})}}, /*int_keys=*/true)},
      {"step", Scalar(5)},
      {"config", Dict({{"lr", Scalar(1)}})},
      {"optimizer",
       Dict({{"state", Dict({{"0", T({2}, {1})}}, true)}, {"param_groups", List({})}})},
  });
  ASSERT_OK_AND_ASSIGN(FlatCheckpoint flat, FlattenPickle(*root));
  EXPECT_THAT(Names(flat), ElementsAre("model.fc.weight", "layers.0", "layers.1", "by_id.7"));
  EXPECT_EQ(flat.tensors[0].numel, 6);
  EXPECT_EQ(flat.tensors[0].nbytes, 24);
  EXPECT_EQ(flat.tensors[2].numel, 1);  // a 0-d tensor holds one element
  EXPECT_THAT(flat.skipped,
              ElementsAre("step (int)", "config (dict, not a tensor)",
                          "optimizer (optimizer state with 1 tensors, not model weights)"));
  EXPECT_EQ(flat.unwrapped, "");
  ASSERT_OK_AND_ASSIGN(flat, FlattenPickle(*Scalar(1)));
  EXPECT_THAT(flat.skipped, ElementsAre("<root> (int)"));
}

TEST(PickleFlattenTest, TrainingWrappersAreReadFromInside) {
  EXPECT_THAT(TrainingWrapperKeys(), ElementsAre("state_dict", "model_state_dict", "module"));
  ASSERT_OK_AND_ASSIGN(
      FlatCheckpoint flat,
      FlattenPickle(*Dict({{"epoch", Scalar(3)}, {"state_dict", Dict({{"w", T({2}, {1})}})}})));
  EXPECT_THAT(Names(flat), ElementsAre("w"));
  EXPECT_EQ(flat.unwrapped, "state_dict");
  EXPECT_THAT(flat.skipped, ElementsAre("epoch (int)"));
  // Wrappers inside wrappers; a wrapper key without tensors is no wrapper.
  ASSERT_OK_AND_ASSIGN(
      flat, FlattenPickle(*Dict({{"module", Dict({{"state_dict", Dict({{"w", T({2}, {1})}})},
                                                  {"global_step", Scalar(9)}})}})));
  EXPECT_THAT(Names(flat), ElementsAre("w"));
  EXPECT_EQ(flat.unwrapped, "module.state_dict");
  EXPECT_THAT(flat.skipped, ElementsAre("module.global_step (int)"));
  ASSERT_OK_AND_ASSIGN(flat, FlattenPickle(*Dict({{"module", Dict({})}, {"w", T({2}, {1})}})));
  EXPECT_THAT(Names(flat), ElementsAre("w"));
  EXPECT_EQ(flat.unwrapped, "");
}

TEST(PickleFlattenTest, AmbiguousWrappersAreRefused) {
  EXPECT_THAT(FlattenPickle(*Dict({{"module", Dict({{"b", T({1}, {1})}})},
                                   {"state_dict", Dict({{"a", T({1}, {1})}})}})),
              StatusIs(kInvalid, Eq(std::string("data.pkl holds tensors both under 'state_dict' "
                                                "and under 'module'; refusing to pick one"))));
  EXPECT_THAT(
      FlattenPickle(*Dict({{"state_dict", Dict({{"a", T({1}, {1})}})},
                           {"x", T({1}, {1})},
                           {"y", List({T({1}, {1})})}})),
      StatusIs(kInvalid, Eq(std::string("data.pkl holds tensors both inside the wrapper "
                                        "'state_dict' and outside it ('x' and 1 more); refusing "
                                        "to pick one"))));
  EXPECT_THAT(
      FlattenPickle(*Dict({{"state_dict", Dict({{"a", T({1}, {1})}})}, {"x", T({1}, {1})}})),
      StatusIs(kInvalid, Eq(std::string("data.pkl holds tensors both inside the wrapper "
                                        "'state_dict' and outside it ('x'); refusing to pick "
                                        "one"))));
}

TEST(PickleFlattenTest, EachRecordIsChecked) {
  EXPECT_THAT(FlattenPickle(*Dict({{"a.b", T({1}, {1})}, {"a", Dict({{"b", T({1}, {1})}})}})),
              StatusIs(kInvalid, Eq(std::string("two tensors are named 'a.b' after flattening "
                                                "nested dicts with '.'"))));
  // The last element sits at 1 + (2-1)*3 + (3-1)*1 = 6: 7 elements needed.
  EXPECT_THAT(FlattenPickle(*Dict({{"w", T({2, 3}, {3, 1}, 1, 6)}})),
              StatusIs(kInvalid, Eq(std::string("tensor 'w' (offset 1, size [2, 3], stride [3, "
                                                "1]) needs 7 elements of storage '0', which "
                                                "holds 6"))));
  EXPECT_THAT(FlattenPickle(*Dict({{"w", T({2, 3}, {3, 1}, 0, 6)}})), ::dflash::testing::IsOk());
  EXPECT_THAT(FlattenPickle(*Dict({{"w", T({int64_t{1} << 40, int64_t{1} << 40}, {1, 1})}})),
              StatusIs(kInvalid, Eq(std::string("tensor 'w' has sizes [1099511627776, "
                                                "1099511627776] and strides [1, 1] that overflow "
                                                "64 bits"))));
  // An empty tensor needs no storage past its offset.
  ASSERT_OK_AND_ASSIGN(FlatCheckpoint flat, FlattenPickle(*Dict({{"w", T({0, 5}, {5, 1}, 6, 6)}})));
  EXPECT_EQ(flat.tensors[0].numel, 0);
}

}  // namespace
}  // namespace dflash::formats
