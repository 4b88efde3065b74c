// Evaluate() on the tiny world (evaluator_fixture.h), around the walk:
// progress and cancellation, shards on two slots and a streamed dataset
// against one pass, a streamed sample gone or changed, a smaller block size,
// and the runs it refuses (block size, layers, hidden size, mask token).
#include "eval/evaluator.h"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "data/eval_dataset.h"
#include "eval/evaluator_fixture.h"
#include "eval/same_counts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::eval {
namespace {

using ::dflash::eval::testing::EvaluatorTest;
using ::dflash::testing::StatusIs;
using ::testing::Eq;
using types::Semantics;

TEST_F(EvaluatorTest, ProgressReportsTotalsFirstAndDoneLast) {
  for (types::Mode mode : {types::Mode::kAnchor, types::Mode::kReplay}) {
    std::vector<types::EvalProgress> seen;
    types::EvalOptions o = Options(mode, Semantics::kZlabCurrent);
    o.max_chunk_elements = 1;
    ASSERT_OK_AND_ASSIGN(types::EvalResult r, Run(o, [&](const types::EvalProgress& p) {
                           seen.push_back(p);
                           return true;
                         }));
    ASSERT_GE(seen.size(), 2u);
    EXPECT_EQ(seen.front().blocks_done, 0);
    EXPECT_EQ(seen.front().samples_total, 4);
    // Anchor mode knows its total; replay gives the most blocks a walk can
    // take, sum of (L - P - 1).
    EXPECT_EQ(seen.front().blocks_total, mode == types::Mode::kAnchor ? r.blocks : 10 + 8 + 0 + 11);
    EXPECT_EQ(seen.back().blocks_done, r.blocks);
    // Replay's total is a bound while walks run (they stop early when blocks
    // are accepted far), tightens at every report and ends exact.
    EXPECT_EQ(seen.front().blocks_total_is_bound, mode == types::Mode::kReplay);
    EXPECT_EQ(seen.back().blocks_total, r.blocks);
    EXPECT_FALSE(seen.back().blocks_total_is_bound);
    for (size_t i = 1; i < seen.size(); ++i) {
      EXPECT_LE(seen[i].blocks_total, seen[i - 1].blocks_total) << "report " << i;
      EXPECT_GE(seen[i].blocks_total, seen[i].blocks_done) << "report " << i;
    }
    // Replay: a sample whose walk takes no block (sample 2, P = L - 1) is
    // done from the start. Anchor mode counts a group's samples after its
    // last chunk's report (the job queue completes the numbers at the end).
    if (mode == types::Mode::kReplay) {
      EXPECT_EQ(seen.back().samples_done, 4);
    } else {
      EXPECT_EQ(seen.back().samples_done, 3);
    }
    for (size_t i = 1; i < seen.size(); ++i) {
      EXPECT_GE(seen[i].blocks_done, seen[i - 1].blocks_done);
    }
  }
}

TEST_F(EvaluatorTest, ProgressReturningFalseCancels) {
  for (types::Mode mode : {types::Mode::kAnchor, types::Mode::kReplay}) {
    int calls = 0;
    EXPECT_THAT(Run(Options(mode, Semantics::kZlabCurrent),
                    [&](const types::EvalProgress&) { return ++calls < 2; }),
                StatusIs(absl::StatusCode::kCancelled, Eq("evaluation cancelled")));
    EXPECT_EQ(calls, 2);
    calls = 0;
    EXPECT_THAT(Run(Options(mode, Semantics::kZlabCurrent),
                    [&](const types::EvalProgress&) {
                      ++calls;
                      return false;
                    }),
                StatusIs(absl::StatusCode::kCancelled, Eq("evaluation cancelled")));
    EXPECT_EQ(calls, 1);  // refused on the totals, before any scoring
  }
}

// Issue 30: shards on two slots (the same CPU objects), merged, give the
// one-pass counts; a streamed copy read in chunks of one sample, too.
void ExpectSameCounts(const types::EvalResult& a, const types::EvalResult& b) {
  testing::ExpectSameCounts(a, b, 1e-5);  // float32 cross entropies of other batches
}

TEST_F(EvaluatorTest, ShardsOnTwoSlotsEqualOnePass) {
  for (types::Mode mode : {types::Mode::kAnchor, types::Mode::kReplay}) {
    const types::EvalOptions o = Options(mode, Semantics::kZlabCurrent);
    ASSERT_OK_AND_ASSIGN(types::EvalResult one, Run(o));
    ASSERT_EQ(one.shards.size(), 1u);
    EXPECT_EQ(one.shards[0].end, 4);
    Placement two;
    two.slots = {{drafter_, target_, "cpu#0"}, {drafter_, target_, "cpu#1"}};
    int threads_set = 0;
    two.threads = 2;
    two.set_threads = [&](int) { ++threads_set; };
    types::EvalOptions sharded = o;
    sharded.shards = 3;
    std::vector<types::EvalProgress> seen;
    std::mutex mu;
    ASSERT_OK_AND_ASSIGN(types::EvalResult merged,
                         Evaluate(two, *dataset_, sharded, [&](const types::EvalProgress& p) {
                           std::lock_guard<std::mutex> lock(mu);
                           seen.push_back(p);
                           return true;
                         }));
    ExpectSameCounts(one, merged);
    EXPECT_EQ(threads_set, 2);  // shared out, then given back
    ASSERT_EQ(merged.shards.size(), 3u);
    EXPECT_EQ(merged.shards[0].first, 0);
    EXPECT_EQ(merged.shards[2].end, 4);
    EXPECT_EQ(merged.shards[0].device, "cpu#0");
    EXPECT_EQ(merged.shards[1].device, "cpu#1");
    int64_t blocks = 0;
    for (size_t k = 0; k < merged.shards.size(); ++k) {
      blocks += merged.shards[k].blocks;
      if (k > 0) EXPECT_EQ(merged.shards[k].first, merged.shards[k - 1].end);
    }
    EXPECT_EQ(blocks, merged.blocks);
    // Every shard's totals before any work, as one pass reports them.
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.front().blocks_done, 0);
    EXPECT_EQ(seen.front().samples_total, 4);
    if (mode == types::Mode::kAnchor) EXPECT_EQ(seen.front().blocks_total, one.blocks);
    EXPECT_EQ(seen.back().blocks_done, one.blocks);
  }
}

TEST_F(EvaluatorTest, ARefusedShardedRunScoresNothing) {
  Placement two;
  two.slots = {{drafter_, target_, "a"}, {drafter_, target_, "b"}};
  types::EvalOptions o = Options(types::Mode::kAnchor, Semantics::kZlabCurrent);
  o.shards = 4;
  int calls = 0;
  EXPECT_THAT(Evaluate(two, *dataset_, o,
                       [&](const types::EvalProgress&) {
                         ++calls;
                         return false;
                       }),
              StatusIs(absl::StatusCode::kCancelled, Eq("evaluation cancelled")));
  EXPECT_EQ(calls, 1);
}

TEST_F(EvaluatorTest, StreamedDatasetEqualsResident) {
  data::DatasetLoadOptions lo;
  lo.path = dataset_->path();
  lo.stream = true;
  lo.stream_budget_bytes = 2 * dataset_->sample_bytes(0);  // one sample per chunk
  ASSERT_OK_AND_ASSIGN(data::EvalDataset streamed, data::EvalDataset::Load(lo));
  EXPECT_TRUE(streamed.streamed());
  EXPECT_EQ(streamed.size(), dataset_->size());
  EXPECT_EQ(streamed.bytes(), 0);
  EXPECT_EQ(streamed.total_sample_bytes(), dataset_->bytes());
  EXPECT_EQ(streamed.fingerprint(), dataset_->fingerprint());
  for (types::Mode mode : {types::Mode::kAnchor, types::Mode::kReplay}) {
    const types::EvalOptions o = Options(mode, Semantics::kZlabCurrent);
    ASSERT_OK_AND_ASSIGN(types::EvalResult resident, Run(o));
    ASSERT_OK_AND_ASSIGN(types::EvalResult chunked, Evaluate(*drafter_, *target_, streamed, o));
    ExpectSameCounts(resident, chunked);
    EXPECT_GE(chunked.shards.size(), 2u);
    int64_t read = 0;
    for (const types::ShardPlacement& s : chunked.shards) read += s.bytes_read;
    EXPECT_EQ(read, dataset_->bytes());
  }
}

TEST_F(EvaluatorTest, StreamedSampleGoneOrChangedFailsNamingTheFile) {
  dflash::testing::TempDir dir;
  std::filesystem::copy(dataset_->path(), dir.Join("copy"),
                        std::filesystem::copy_options::recursive);
  data::DatasetLoadOptions lo;
  lo.path = dir.Join("copy");
  lo.stream = true;
  ASSERT_OK_AND_ASSIGN(data::EvalDataset streamed, data::EvalDataset::Load(lo));
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(lo.path)) {
    if (e.path().extension() != ".json") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 2u);
  // Rewritten with another sample's bytes: FailedPrecondition, named.
  std::filesystem::copy_file(files[0], files[1], std::filesystem::copy_options::overwrite_existing);
  const types::EvalOptions o = Options(types::Mode::kReplay, Semantics::kZlabCurrent);
  absl::StatusOr<types::EvalResult> changed = Evaluate(*drafter_, *target_, streamed, o);
  EXPECT_THAT(changed, StatusIs(absl::StatusCode::kFailedPrecondition,
                                ::testing::HasSubstr("' changed since the dataset was loaded")));
  EXPECT_THAT(changed.status().message(), ::testing::HasSubstr(files[1]));
  // Gone: NotFound, named.
  std::filesystem::remove(files[1]);
  EXPECT_THAT(Evaluate(*drafter_, *target_, streamed, o),
              StatusIs(absl::StatusCode::kNotFound,
                       Eq("streamed dataset '" + streamed.name() + "': sample file '" + files[1] +
                          "' is gone since the dataset was loaded")));
}

TEST_F(EvaluatorTest, SmallerBlockSizeOverride) {
  types::EvalOptions o = Options(types::Mode::kReplay, Semantics::kZlab2025);
  o.block_size = 2;
  ASSERT_OK_AND_ASSIGN(types::EvalResult r, Run(o));
  EXPECT_EQ(r.block_size, 2);
  EXPECT_EQ(r.positions.size(), 1u);
  EXPECT_EQ(r.accepted_histogram.size(), 2u);
  for (size_t s = 0; s < world_->tokens.size(); ++s) {
    const int64_t L = static_cast<int64_t>(world_->tokens[s].size());
    EXPECT_EQ(r.per_sample[s].accepted_total, L - world_->spec.prompts[s]);
  }
}

TEST_F(EvaluatorTest, BlockSizeOutOfRange) {
  for (int64_t b : {int64_t{1}, int64_t{5}}) {
    types::EvalOptions o = Options(types::Mode::kReplay, Semantics::kZlabCurrent);
    o.block_size = b;
    EXPECT_THAT(Run(o), StatusIs(absl::StatusCode::kInvalidArgument,
                                 Eq("block_size " + std::to_string(b) +
                                    " must be in [2, 4] (the drafter's block size)")));
  }
}

TEST_F(EvaluatorTest, DatasetWithoutTheDrafterLayers) {
  data::DatasetLoadOptions lo;
  lo.path = all_->dir->Join("data");
  lo.layer_ids = {{"hidden_states", {1, 2, 4}}};
  ASSERT_OK_AND_ASSIGN(data::EvalDataset other, data::EvalDataset::Load(lo));
  EXPECT_THAT(Evaluate(*drafter_, *target_, other, types::EvalOptions{}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("drafter needs layer 3; dataset holds [1, 2, 4] (hf-layer; as "
                          "vllm-capture-id: needs 4, holds [2, 3, 5]); the dataset holds "
                          "every layer the drafter needs shifted by +1: check the layer "
                          "numbering declared by the drafter (speculators "
                          "aux_hidden_state_layer_ids count vllm-capture-id) and by the dataset "
                          "(dataset.json 'layer_numbering')")));
}

TEST_F(EvaluatorTest, TargetHiddenSizeMismatch) {
  weights::TargetTensors t = world_->Target();
  t.embed = t.embed.narrow(1, 0, 8).contiguous();
  t.lm_head = t.lm_head.narrow(1, 0, 8).contiguous();
  t.hidden_size = 8;
  EXPECT_THAT(Evaluate(*drafter_, t, *dataset_, types::EvalOptions{}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("dataset hidden size 16 does not match the target's 8 (embed_tokens "
                          "[16, 8]): the features were captured from another model")));
}

TEST_F(EvaluatorTest, MaskTokenOutsideTheTargetVocabulary) {
  weights::TargetTensors t = world_->Target();
  t.embed = t.embed.narrow(0, 0, 15).contiguous();
  t.lm_head = t.lm_head.narrow(0, 0, 15).contiguous();
  t.vocab_size = 15;
  EXPECT_THAT(Evaluate(*drafter_, t, *dataset_, types::EvalOptions{}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("drafter mask_token_id 15 is outside the target's vocabulary [0, 15)")));
}

}  // namespace
}  // namespace dflash::eval
