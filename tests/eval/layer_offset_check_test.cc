// The layer-numbering check: a warning for each shift (-1, +1) whose layers
// the dataset also holds, none when it holds neither or a shifted id would
// be negative, and the wording that says which reading scored higher.
#include "eval/layer_offset_check.h"

#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"
#include "test_util/tiny_world.h"

namespace dflash::eval {
namespace {

using ::dflash::testing::TinySpec;

// The warnings for a drafter reading `drafter_layers` of a dataset holding
// `dataset_layers`.
absl::StatusOr<std::vector<std::string>> Warnings(std::vector<int> drafter_layers,
                                                  std::vector<int> dataset_layers) {
  TinySpec spec;
  spec.drafter_layers = std::move(drafter_layers);
  spec.dataset_layers = std::move(dataset_layers);
  const dflash::testing::TinyWorld w = dflash::testing::MakeTinyWorld(spec);
  dflash::testing::TempDir dir;
  w.WriteDataset(dir.Join("data"));
  data::DatasetLoadOptions o;
  o.path = dir.Join("data");
  absl::StatusOr<data::EvalDataset> d = data::EvalDataset::Load(o);
  if (!d.ok()) return d.status();
  absl::StatusOr<model::DrafterModel> m = model::DrafterModel::Create(w.cfg, w.weights);
  if (!m.ok()) return m.status();
  return LayerOffsetWarnings(*m, w.Target(), *d, types::EvalOptions{});
}

// The message, with both accuracies read back; checks the verdict's wording
// follows them.
void ExpectWarning(const std::string& got, const std::string& by, const std::string& shifted,
                   const std::string& declared) {
  const std::string esc = by == "+1" ? "\\+1" : by;
  const std::regex re(
      "layer numbering check: the dataset also holds the drafter's layers shifted by " + esc +
      " \\(\\[" + shifted +
      "\\]\\); first-position accuracy on 3 sample\\(s\\), (\\d+) block\\(s\\): ([0-9.]+) as "
      "declared \\(\\[" +
      declared + "\\], hf-layer\\) vs ([0-9.]+) shifted by " + esc + "; (.*)");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(got, m, re)) << got;
  // 8 even anchors in three samples; the fourth (9 tokens, responses from
  // position 8) has none and is not counted.
  EXPECT_EQ(m[1].str(), "24");
  const double as_declared = std::atof(m[2].str().c_str());
  const double as_shifted = std::atof(m[3].str().c_str());
  EXPECT_EQ(m[4].str(), as_shifted > as_declared
                            ? "the shifted reading scores higher: check the layer numbering "
                              "declared by the drafter and by the dataset (the declared one was "
                              "used; nothing was switched)"
                            : "the declared reading scores at least as high (it was used)");
}

TEST(LayerOffsetCheckTest, NoWarningWhenNoShiftFits) {
  // Shifted by -1: [2, 0], layer 0 not held; by +1: [4, 2], layer 4 not held.
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> w, Warnings({3, 1}, {1, 2, 3}));
  EXPECT_TRUE(w.empty());
  // Shifted by -1 would read layer -1.
  ASSERT_OK_AND_ASSIGN(w, Warnings({0, 1}, {0, 1}));
  EXPECT_TRUE(w.empty());
}

TEST(LayerOffsetCheckTest, OneWarningPerShiftThatFits) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> w, Warnings({2, 1}, {1, 2, 3}));
  ASSERT_EQ(w.size(), 1u);
  ExpectWarning(w[0], "+1", "3, 2", "2, 1");
  ASSERT_OK_AND_ASSIGN(w, Warnings({2, 1}, {0, 1, 2, 3}));
  ASSERT_EQ(w.size(), 2u);
  ExpectWarning(w[0], "-1", "1, 0", "2, 1");
  ExpectWarning(w[1], "+1", "3, 2", "2, 1");
}

}  // namespace
}  // namespace dflash::eval
