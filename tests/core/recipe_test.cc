// core/recipe: which fields a job's recipe holds, that the fingerprint
// follows them and nothing else, and the refusal that names the differences.
#include "core/recipe.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::core {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;

types::JobRecord Finished(const std::string& id) {
  types::JobRecord j;
  j.id = id;
  j.request.params.options.max_samples = 8;
  types::EvalResult r;
  r.dataset_fingerprint = "h64:00000000000000d1";
  r.target_fingerprint = "h64:00000000000000a1";
  r.semantics = "zlab-current";
  r.block_size = 16;
  j.result = r;
  return j;
}

TEST(RecipeTest, NamesEveryFieldInOrder) {
  types::JobRecord j = Finished("ev-1");
  types::SamplingSetting s;
  s.temperature = 1;
  s.top_p = 0.95;
  s.top_k = 20;
  j.request.params.options.sampling = {s};
  j.request.params.options.policies = {types::ProposalPolicy::kArgmax};
  const Recipe r = RecipeOf(j);
  std::vector<std::string> text;
  for (const RecipeField& f : r.fields) text.push_back(f.name + "=" + f.value);
  EXPECT_THAT(text, ElementsAre("dataset=h64:00000000000000d1", "target=h64:00000000000000a1",
                                "semantics=zlab-current", "mode=anchor", "block size=16",
                                "samples=at most 8", "anchors=even", "sampling=t=1,p=0.95,k=20",
                                "policies=argmax", "engine=none"));
  EXPECT_THAT(r.fingerprint, ::testing::MatchesRegex("r64:[0-9a-f]{16}"));
}

TEST(RecipeTest, TheFingerprintFollowsTheRecipeOnly) {
  types::JobRecord a = Finished("ev-1"), b = Finished("ev-2");
  b.request.params.drafter = "another";  // the drafter is what is compared
  b.request.run = "other-run";
  b.request.params.options.ci_resamples = 50;  // intervals, not the numbers
  b.result->tau = 3;
  EXPECT_EQ(RecipeOf(a).fingerprint, RecipeOf(b).fingerprint);
  b.request.params.options.anchors = types::AnchorStrategy::kRandom;
  b.request.params.options.seed = 7;
  EXPECT_NE(RecipeOf(a).fingerprint, RecipeOf(b).fingerprint);
  EXPECT_THAT(RecipeDifferences(RecipeOf(a), RecipeOf(b)),
              ElementsAre("anchors: even vs random, seed 7"));
}

TEST(RecipeTest, ReplayHasItsOwnFields) {
  types::JobRecord a = Finished("ev-1"), b = Finished("ev-2");
  b.result->mode = types::Mode::kReplay;
  b.request.params.options.max_new_tokens = 64;
  EXPECT_THAT(RecipeDifferences(RecipeOf(a), RecipeOf(b)),
              ElementsAre("mode: anchor vs replay", "anchors: even vs (not set)",
                          "sampling: greedy only vs (not set)",
                          "policies: the drafter's default vs (not set)",
                          "engine: none vs (not set)", "max new tokens: (not set) vs 64"));
}

TEST(RecipeTest, RequireSameRecipeNamesEachJobAndField) {
  types::JobRecord a = Finished("ev-1"), b = Finished("ev-2"), c = Finished("ev-3");
  c.result->target_fingerprint = "";  // a result stored before target fingerprints
  c.result->block_size = 8;
  EXPECT_OK(RequireSameRecipe({a, b}, "compare"));
  EXPECT_THAT(RequireSameRecipe({a, b, c}, "compare"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "compare: the jobs' recipes differ, so their numbers are not comparable: "
                       "ev-3 against ev-1 (target: h64:00000000000000a1 vs (not recorded); block "
                       "size: 16 vs 8); pass --allow-recipe-mismatch to compare them anyway"));
}

}  // namespace
}  // namespace dflash::core
