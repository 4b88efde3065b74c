// vLLM / speculators captures (hs_<i>.safetensors) written in the test: the
// file names, the loss mask from the manifest's prompt lengths or
// all-positions, hidden_states flattened per token, and each defect
// (FP8 included) with its exact message.
#include "data/vllm_capture.h"

#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/safetensors_writer.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::data {
namespace {

using ::dflash::testing::SafetensorsWriter;
using ::dflash::testing::StatusIs;

class VllmCaptureTest : public ::testing::Test {
 protected:
  // 4 tokens, 2 captured layers of width 3: values 0..23 in file order.
  static SafetensorsWriter Good() {
    SafetensorsWriter w;
    w.AddValues("token_ids", "I64", {4}, {3, 1, 4, 1});
    std::vector<double> h(24);
    for (int i = 0; i < 24; ++i) h[i] = i;
    w.AddValues("hidden_states", "F32", {4, 2, 3}, h);
    return w;
  }
  static SampleExpectations Expect() {
    SampleExpectations e;
    e.groups = {{"hidden_states", {2, 17}}};
    e.responses.prompt_lengths = {9, 2};
    return e;
  }
  std::string Write(const SafetensorsWriter& w, const std::string& name = "hs_1.safetensors") {
    return w.WriteTo(dir_.Join(name));
  }
  void ExpectBad(const SafetensorsWriter& w, const SampleExpectations& e, const std::string& msg,
                 const std::string& name = "hs_1.safetensors") {
    EXPECT_THAT(ReadVllmCapture(Write(w, name), e),
                StatusIs(absl::StatusCode::kInvalidArgument, msg));
  }

  dflash::testing::TempDir dir_;
};

TEST_F(VllmCaptureTest, CaptureFileNames) {
  EXPECT_TRUE(IsVllmCaptureName("hs_0.safetensors"));
  EXPECT_TRUE(IsVllmCaptureName("hs_123.safetensors"));
  EXPECT_FALSE(IsVllmCaptureName("hs_0.ckpt"));
  EXPECT_FALSE(IsVllmCaptureName("data_0.safetensors"));
  EXPECT_FALSE(IsVllmCaptureName("model.safetensors"));
}

TEST_F(VllmCaptureTest, PromptLengthOfTheFileIndexStartsTheResponses) {
  ASSERT_OK_AND_ASSIGN(HostSample s, ReadVllmCapture(Write(Good()), Expect()));
  EXPECT_TRUE(at::equal(s.input_ids, at::tensor(std::vector<int64_t>{3, 1, 4, 1})));
  // hs_1: prompt_lengths[1] = 2.
  EXPECT_TRUE(at::equal(s.loss_mask, at::tensor(std::vector<uint8_t>{0, 0, 1, 1})));
  EXPECT_TRUE(s.mask_from_manifest);
  EXPECT_EQ(s.hidden_size, 3);
  ASSERT_EQ(s.features.size(), 1u);
  // [4, 2, 3] -> [4, 6]: a token's layers side by side, in capture order.
  EXPECT_TRUE(at::equal(s.features[0], at::arange(24, at::kFloat).view({4, 6})));
}

TEST_F(VllmCaptureTest, AllPositionsAndBatchedIds) {
  SafetensorsWriter w;
  w.AddValues("input_ids", "I32", {1, 2}, {5, 6});
  w.AddValues("hidden_states", "BF16", {2, 1, 2}, {0.5, 1, 2, 4});
  SampleExpectations e;
  e.groups = {{"hidden_states", {7}}};
  e.responses.all_positions = true;
  ASSERT_OK_AND_ASSIGN(HostSample s, ReadVllmCapture(Write(w), e));
  EXPECT_TRUE(at::equal(s.input_ids, at::tensor(std::vector<int64_t>{5, 6})));
  EXPECT_TRUE(at::equal(s.loss_mask, at::ones({2}, at::kByte)));
  EXPECT_EQ(s.features[0].scalar_type(), at::kBFloat16);
}

TEST_F(VllmCaptureTest, ResponsesMustBeDeclaredAndFit) {
  SampleExpectations e = Expect();
  e.responses.prompt_lengths.clear();
  ExpectBad(Good(), e,
            "records no loss mask; declare where responses start in dataset.json: "
            "\"prompt_lengths\": [P per sample index] or \"loss_mask\": \"all-positions\"");
  ExpectBad(Good(), Expect(), "has sample index 5 but dataset.json 'prompt_lengths' has 2 entries",
            "hs_5.safetensors");
  ExpectBad(Good(), Expect(),
            "has 4 tokens but dataset.json 'prompt_lengths[0]' is 9: no response position",
            "hs_0.safetensors");
  SafetensorsWriter w = Good();
  w.AddValues("loss_mask", "U8", {4}, {0, 0, 1, 1});
  ExpectBad(w, Expect(),
            "holds a 'loss_mask' tensor, which vLLM captures do not record; for "
            "hs_{i}.safetensors the responses come from dataset.json (\"prompt_lengths\" or "
            "\"loss_mask\": \"all-positions\") only");
}

TEST_F(VllmCaptureTest, BadTokenIdsAreNamed) {
  SafetensorsWriter w;
  w.AddValues("hidden_states", "F32", {1, 2, 1}, {0, 1});
  ExpectBad(w, Expect(), "tensor 'token_ids' is missing; the file holds [hidden_states]");
  SafetensorsWriter f;
  f.AddValues("token_ids", "F32", {2}, {1, 2});
  ExpectBad(f, Expect(), "'token_ids' has shape [2] and dtype Float; expected integer ids [seq]");
  SampleExpectations e = Expect();
  e.vocab_size = 4;
  ExpectBad(Good(), e, "'token_ids' holds ids in [1, 4]; expected [0, 4)");
  SafetensorsWriter n;
  n.AddValues("token_ids", "I64", {2}, {-1, 2});
  ExpectBad(n, Expect(), "'token_ids' holds ids in [-1, 2]; expected [0, 0)");
}

TEST_F(VllmCaptureTest, BadHiddenStatesAreNamed) {
  SampleExpectations e = Expect();
  e.groups = {{"aux_hidden_state", {2, 17}}};
  ExpectBad(Good(), e,
            "a vLLM capture holds one feature, 'hidden_states' [seq, layers, H]; declare "
            "\"features\": {\"hidden_states\": [capture ids]} in dataset.json");
  e = Expect();
  e.groups = {{"hidden_states", {2, 17, 30}}};
  ExpectBad(Good(), e,
            "'hidden_states' has shape [4, 2, 3]; expected [4, 3, H] (4 tokens, 3 declared "
            "layers)");
  e = Expect();
  e.hidden_size = 8;
  ExpectBad(Good(), e, "'hidden_states' has hidden size 3; expected 8");
  e = Expect();
  e.feature_dtype = at::kHalf;
  ExpectBad(Good(), e, "'hidden_states' has dtype Float; the dataset's first sample has Half");
  SafetensorsWriter w;
  w.AddValues("token_ids", "I64", {4}, {1, 2, 3, 4});
  ExpectBad(w, Expect(), "tensor 'hidden_states' is missing; the file holds [token_ids]");
}

TEST_F(VllmCaptureTest, Fp8CapturesAreRefused) {
  SafetensorsWriter w = Good();
  w.AddValues("hidden_states_scale", "F32", {1}, {1});
  ExpectBad(w, Expect(),
            "holds 'hidden_states_scale': an FP8 capture with scales; this service does not "
            "dequantize FP8 hidden states; capture in bf16 or fp32");
  SafetensorsWriter f;
  f.AddValues("token_ids", "I64", {2}, {1, 2});
  f.Add("hidden_states", "F8_E4M3", {2, 1, 2}, std::string(4, '\0'));
  const std::string path = Write(f);
  EXPECT_THAT(ReadVllmCapture(path, Expect()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "an FP8 capture ('" + path +
                           "': tensor 'hidden_states': unknown dtype 'F8_E4M3'; known: F64, F32, "
                           "F16, BF16, I64, I32, I16, I8, U8, BOOL): this service does not "
                           "dequantize FP8 hidden states; capture in bf16 or fp32"));
}

}  // namespace
}  // namespace dflash::data
