// ReadSample on small torch.save files written in the test: squeezed shapes
// and converted dtypes, the width rules, the declared final hidden state,
// the dispatch to vLLM captures, and each defect with its exact message.
#include "data/sample_reader.h"

#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/safetensors_writer.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"
#include "test_util/torch_save_writer.h"

namespace dflash::data {
namespace {

using ::dflash::testing::StatusIs;
using Tensors = std::vector<std::pair<std::string, at::Tensor>>;

std::string StorageOf(c10::ScalarType t) {
  switch (t) {
    case at::kLong: return "LongStorage";
    case at::kInt: return "IntStorage";
    case at::kByte: return "ByteStorage";
    case at::kBool: return "BoolStorage";
    case at::kDouble: return "DoubleStorage";
    default: return "FloatStorage";
  }
}

class SampleReaderTest : public ::testing::Test {
 protected:
  // A torch.save dict of `tensors` as data_0.ckpt.
  std::string Write(const Tensors& tensors) {
    dflash::testing::TorchSaveWriter w;
    for (const auto& [name, t] : tensors) {
      const at::Tensor c = t.contiguous();
      std::string bytes(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
      w.Add(name, StorageOf(c.scalar_type()), c.sizes().vec(), std::move(bytes),
            static_cast<int>(c.element_size()));
    }
    return w.WriteTo(dir_.Join("data_0.ckpt"));
  }
  // L = 4 tokens, mask 0 0 1 1, hidden_states [4, 2 * 3] (two layers of 3).
  static Tensors Good() {
    return {{"input_ids", at::tensor(std::vector<int64_t>{5, 6, 7, 8})},
            {"loss_mask", at::tensor(std::vector<int64_t>{0, 0, 1, 1})},
            {"hidden_states", at::arange(24, at::kFloat).view({4, 6})}};
  }
  static SampleExpectations Expect() {
    SampleExpectations e;
    e.groups = {{"hidden_states", {1, 2}}};
    return e;
  }
  static Tensors With(Tensors t, const std::string& key, at::Tensor value) {
    for (auto& [name, v] : t) {
      if (name == key) v = std::move(value);
    }
    return t;
  }
  static Tensors Without(Tensors t, const std::string& key) {
    Tensors out;
    for (auto& [name, v] : t) {
      if (name != key) out.emplace_back(name, v);
    }
    return out;
  }
  void ExpectBad(const Tensors& t, const SampleExpectations& e, const std::string& msg) {
    EXPECT_THAT(ReadSample(Write(t), e), StatusIs(absl::StatusCode::kInvalidArgument, msg));
  }

  dflash::testing::TempDir dir_;
};

TEST_F(SampleReaderTest, BatchedShapesAreSqueezedAndDtypesConverted) {
  const Tensors t = {{"input_ids", at::tensor(std::vector<int>{5, 6, 7, 8}).view({1, 4})},
                     {"loss_mask", at::tensor(std::vector<int64_t>{0, 1, 1, 0}).to(at::kBool)},
                     {"hidden_states", at::arange(24, at::kFloat).view({1, 4, 6})},
                     {"final", at::ones({4, 3}, at::kDouble)}};
  SampleExpectations e = Expect();
  e.final_hidden_key = "final";
  ASSERT_OK_AND_ASSIGN(HostSample s, ReadSample(Write(t), e));
  EXPECT_TRUE(at::equal(s.input_ids, at::tensor(std::vector<int64_t>{5, 6, 7, 8})));
  EXPECT_TRUE(at::equal(s.loss_mask, at::tensor(std::vector<uint8_t>{0, 1, 1, 0})));
  ASSERT_EQ(s.features.size(), 1u);
  EXPECT_TRUE(at::equal(s.features[0], at::arange(24, at::kFloat).view({4, 6})));
  EXPECT_EQ(s.hidden_size, 3);  // derived: width 6 over 2 layers
  EXPECT_EQ(s.final_hidden.sizes(), (std::vector<int64_t>{4, 3}));
  EXPECT_FALSE(s.mask_from_manifest);
}

TEST_F(SampleReaderTest, BadTokensAndMasksAreNamed) {
  ExpectBad(Without(Good(), "input_ids"), Expect(),
            "tensor 'input_ids' is missing; the file holds [loss_mask, hidden_states]");
  ExpectBad(With(Good(), "input_ids", at::ones({4})), Expect(),
            "'input_ids' has dtype Float; expected an integer type (int64)");
  ExpectBad(With(Good(), "input_ids", at::ones({2, 2}, at::kLong)), Expect(),
            "'input_ids' has shape [2, 2]; expected [L] or [1, L]");
  ExpectBad(With(Good(), "input_ids", at::ones({0}, at::kLong)), Expect(), "'input_ids' is empty");
  ExpectBad(With(Good(), "loss_mask", at::ones({4})), Expect(),
            "'loss_mask' has dtype Float; expected an integer or bool type holding 0/1");
  ExpectBad(With(Good(), "loss_mask", at::ones({3}, at::kLong)), Expect(),
            "'loss_mask' has length 3; 'input_ids' has length 4");
  ExpectBad(With(Good(), "loss_mask", at::tensor(std::vector<int64_t>{0, 1, -1, 1})), Expect(),
            "'loss_mask' holds -1 at position 2; expected only 0 or 1");
  SampleExpectations e = Expect();
  e.vocab_size = 8;
  ExpectBad(Good(), e,
            "'input_ids' holds token id 8 at position 3; expected [0, 8) for the "
            "target's vocabulary");
}

TEST_F(SampleReaderTest, BadFeaturesAreNamed) {
  ExpectBad(Without(Good(), "hidden_states"), Expect(),
            "declared feature 'hidden_states' is missing; the file holds [input_ids, loss_mask]");
  ExpectBad(With(Good(), "hidden_states", at::ones({4, 6}, at::kLong)), Expect(),
            "'hidden_states' has dtype Long; expected a floating-point type");
  ExpectBad(With(Good(), "hidden_states", at::ones({6})), Expect(),
            "'hidden_states' has shape [6]; expected [L, W] or [1, L, W]");
  ExpectBad(With(Good(), "hidden_states", at::ones({3, 6})), Expect(),
            "'hidden_states' has length 3; 'input_ids' has length 4");
  ExpectBad(With(Good(), "hidden_states", at::ones({4, 5})), Expect(),
            "'hidden_states' has width 5, not a positive multiple of its 2 declared layers [1, 2]");
  SampleExpectations e = Expect();
  e.feature_dtype = at::kBFloat16;
  ExpectBad(Good(), e,
            "'hidden_states' has dtype Float; the dataset's other features are BFloat16 (request "
            "a dtype to convert them all)");
  e = Expect();
  e.hidden_size = 4;
  ExpectBad(Good(), e,
            "'hidden_states' has width 6; expected 2 layers x hidden size 4 = 8 (hidden size of "
            "the dataset's other features)");
  e.hidden_size_from_manifest = true;
  ExpectBad(Good(), e,
            "'hidden_states' has width 6; expected 2 layers x hidden size 4 = 8 (hidden_size from "
            "the manifest)");
}

TEST_F(SampleReaderTest, BadFinalHiddenStatesAreNamed) {
  SampleExpectations e = Expect();
  e.final_hidden_key = "final";
  ExpectBad(Good(), e,
            "declared final hidden state 'final' is missing; the file holds [input_ids, "
            "loss_mask, hidden_states]");
  Tensors t = Good();
  t.emplace_back("final", at::ones({4, 3}, at::kLong));
  ExpectBad(t, e, "'final' has dtype Long; expected a floating-point type");
  t.back().second = at::ones({5, 3});
  ExpectBad(t, e, "'final' has length 5; 'input_ids' has length 4");
  t.back().second = at::ones({4, 6});
  ExpectBad(t, e,
            "'final' has width 6; expected 1 layer x hidden size 3 = 3 (hidden size of the "
            "dataset's other features)");
}

// hs_<i>.safetensors goes to the vLLM reader (no loss mask in the file).
TEST_F(SampleReaderTest, VllmCaptureNamesAreReadAsCaptures) {
  dflash::testing::SafetensorsWriter w;
  w.AddValues("token_ids", "I64", {3}, {1, 2, 3});
  w.AddValues("hidden_states", "F32", {3, 1, 2}, {0, 1, 2, 3, 4, 5});
  SampleExpectations e;
  e.groups = {{"hidden_states", {7}}};
  e.responses.all_positions = true;
  ASSERT_OK_AND_ASSIGN(HostSample s, ReadSample(w.WriteTo(dir_.Join("hs_0.safetensors")), e));
  EXPECT_TRUE(s.mask_from_manifest);
  EXPECT_EQ(s.hidden_size, 2);
}

}  // namespace
}  // namespace dflash::data
