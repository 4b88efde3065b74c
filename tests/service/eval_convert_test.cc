// service/eval_convert: EvalRequest -> EvalParams (defaults, every shape
// check with its message: enums, counts, names, semantics, metrics,
// sampling, policies, intervals, shards) and EvalResult -> its proto.
#include "service/eval_convert.h"

#include <string>

#include "full_eval_request.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::service {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::Eq;

using ::dflash::testing::kInvalid;

class EvalConvertTest : public ::testing::Test {};

TEST_F(EvalConvertTest, EvalRequestToCoreParams) {
  ASSERT_OK_AND_ASSIGN(types::EvalParams p, FromProto(FullEvalRequest()));
  EXPECT_EQ(p.drafter, "step-4000");
  EXPECT_EQ(p.dataset, "gsm8k");
  EXPECT_EQ(p.target, "qwen3-8b");
  EXPECT_EQ(p.options.mode, types::Mode::kReplay);
  EXPECT_EQ(p.options.anchors, types::AnchorStrategy::kRandom);
  EXPECT_EQ(p.options.max_samples, 12);
  EXPECT_EQ(p.options.max_blocks, 7);
  EXPECT_EQ(p.options.seed, uint64_t{1} << 40);
  EXPECT_EQ(p.options.block_size, 8);
  EXPECT_EQ(p.options.max_new_tokens, 256);
  EXPECT_EQ(p.options.semantics, types::Semantics::kZlab2025);
  EXPECT_EQ(p.options.metrics, types::MetricSet::kAcceptance);
  EXPECT_TRUE(p.options.full_positions);
}

TEST_F(EvalConvertTest, DefaultsOfAnEmptyRequest) {
  ASSERT_OK_AND_ASSIGN(types::EvalParams p, FromProto(pb::EvalRequest()));
  EXPECT_EQ(p.options.mode, types::Mode::kAnchor);
  EXPECT_EQ(p.options.anchors, types::AnchorStrategy::kEven);
  EXPECT_EQ(p.options.semantics, types::Semantics::kZlabCurrent);
  EXPECT_EQ(p.options.max_samples, 0);
  EXPECT_EQ(p.options.metrics, types::MetricSet::kAll);
  EXPECT_FALSE(p.options.full_positions);
}

TEST_F(EvalConvertTest, EvalRequestShapeErrors) {
  auto with = [](auto edit) {
    pb::EvalRequest r = FullEvalRequest();
    edit(r);
    return r;
  };
  EXPECT_THAT(FromProto(with([](pb::EvalRequest& r) { r.set_mode(static_cast<pb::EvalMode>(7)); })),
              StatusIs(kInvalid, Eq("mode 7 is not anchor or replay")));
  EXPECT_THAT(FromProto(with(
                  [](pb::EvalRequest& r) { r.set_anchors(static_cast<pb::AnchorStrategy>(9)); })),
              StatusIs(kInvalid, Eq("anchors 9 is not even, random or all")));
  EXPECT_THAT(FromProto(with([](pb::EvalRequest& r) { r.set_max_samples(-1); })),
              StatusIs(kInvalid, Eq("max_samples must be >= 0; got -1")));
  EXPECT_THAT(FromProto(with([](pb::EvalRequest& r) { r.set_max_blocks(-2); })),
              StatusIs(kInvalid, Eq("max_blocks must be >= 0; got -2")));
  EXPECT_THAT(FromProto(with([](pb::EvalRequest& r) { r.set_block_size(-3); })),
              StatusIs(kInvalid, Eq("block_size must be >= 0; got -3")));
  EXPECT_THAT(FromProto(with([](pb::EvalRequest& r) { r.set_max_new_tokens(-4); })),
              StatusIs(kInvalid, Eq("max_new_tokens must be >= 0; got -4")));
  EXPECT_THAT(FromProto(with([](pb::EvalRequest& r) { r.set_semantics("zlab-2024"); })),
              StatusIs(kInvalid, Eq("semantics must be zlab-current or zlab-2025 (empty = "
                                    "zlab-current); got 'zlab-2024'")));
  EXPECT_THAT(FromProto(with([](pb::EvalRequest& r) { r.set_metrics("speed"); })),
              StatusIs(kInvalid, Eq("metrics must be all or acceptance (empty = all); got "
                                    "'speed'")));
  EXPECT_THAT(FromProto(with([](pb::EvalRequest& r) { r.set_drafter(std::string(257, 'x')); })),
              StatusIs(kInvalid, Eq("drafter is 257 bytes long; at most 256 are allowed")));
  EXPECT_THAT(FromProto(with([](pb::EvalRequest& r) { r.set_dataset("a\nb"); })),
              StatusIs(kInvalid, Eq("dataset contains control character 0x0a at byte 1")));
}

TEST_F(EvalConvertTest, EvalResultFields) {
  types::EvalResult r;
  r.mode = types::Mode::kReplay;
  r.family = "DFlash 1";
  r.semantics = "zlab-2025";
  r.semantics_reference = "ref";
  r.block_size = 4;
  r.samples = 2;
  r.blocks = 5;
  r.tokens_scored = 11;
  r.draft_vocab_size = 48;
  r.labels_in_draft_vocab = 9;
  r.accept_length_pooled = 2.4;
  r.tau = 2.5;
  types::PositionMetrics p;
  p.position = 1;
  p.counted = 5;
  p.correct = 3;
  p.accuracy = 0.6;
  p.accepted = 3;
  p.acceptance = 0.6;
  r.positions = {p};
  r.accepted_histogram = {2, 1, 1, 1};
  types::SampleSummary s;
  s.sample_index = 17;
  s.blocks = 3;
  s.mean_accept_length = 2.0;
  s.length = 30;
  s.first_response_position = 10;
  r.per_sample = {s};
  r.device = "cpu";
  r.dtype = "fp32";
  r.drafter_fingerprint = "h64:a";
  r.dataset_fingerprint = "h64:b";
  r.warnings = {"w"};
  pb::EvalResult out;
  ToProto(r, &out);
  EXPECT_EQ(out.mode(), pb::EVAL_MODE_REPLAY);
  EXPECT_EQ(out.family(), "DFlash 1");
  EXPECT_EQ(out.semantics(), "zlab-2025");
  EXPECT_EQ(out.semantics_reference(), "ref");
  EXPECT_EQ(out.block_size(), 4);
  EXPECT_EQ(out.samples(), 2);
  EXPECT_EQ(out.blocks(), 5);
  EXPECT_EQ(out.tokens_scored(), 11);
  EXPECT_EQ(out.draft_vocab_size(), 48);
  EXPECT_EQ(out.labels_in_draft_vocab(), 9);
  EXPECT_DOUBLE_EQ(out.accept_length_pooled(), 2.4);
  EXPECT_DOUBLE_EQ(out.tau(), 2.5);
  ASSERT_EQ(out.positions_size(), 1);
  EXPECT_EQ(out.positions(0).position(), 1);
  EXPECT_EQ(out.positions(0).counted(), 5);
  EXPECT_EQ(out.positions(0).correct(), 3);
  EXPECT_DOUBLE_EQ(out.positions(0).accuracy(), 0.6);
  EXPECT_THAT(out.accepted_histogram(), ::testing::ElementsAre(2, 1, 1, 1));
  ASSERT_EQ(out.per_sample_size(), 1);
  EXPECT_EQ(out.per_sample(0).sample_index(), 17);
  EXPECT_EQ(out.per_sample(0).blocks(), 3);
  EXPECT_EQ(out.per_sample(0).length(), 30);
  EXPECT_EQ(out.per_sample(0).first_response_position(), 10);
  EXPECT_EQ(out.device(), "cpu");
  EXPECT_EQ(out.drafter_fingerprint(), "h64:a");
  EXPECT_EQ(out.dataset_fingerprint(), "h64:b");
  EXPECT_THAT(out.warnings(), ::testing::ElementsAre("w"));
  EXPECT_FALSE(out.has_first_miss());  // DFlash 1: no selector split
}

TEST_F(EvalConvertTest, SamplingIntervalsAndShardsFromTheWire) {
  pb::EvalRequest r;
  pb::SamplingSetting* s = r.add_sampling();
  s->set_temperature(0.6);
  s->set_top_k(20);  // top_p 0 on the wire: off
  r.add_policies("argmax");
  r.set_ci("none");
  r.set_ci_resamples(500);
  r.set_shards(3);
  ASSERT_OK_AND_ASSIGN(types::EvalParams p, FromProto(r));
  ASSERT_EQ(p.options.sampling.size(), 1u);
  EXPECT_EQ(p.options.sampling[0].temperature, 0.6);
  EXPECT_EQ(p.options.sampling[0].top_p, 1.0);
  EXPECT_EQ(p.options.sampling[0].top_k, 20);
  EXPECT_THAT(p.options.policies, ::testing::ElementsAre(types::ProposalPolicy::kArgmax));
  EXPECT_EQ(p.options.ci, types::CiMethod::kNone);
  EXPECT_EQ(p.options.ci_resamples, 500);
  EXPECT_EQ(p.options.shards, 3);
}

TEST_F(EvalConvertTest, SamplingIntervalsAndShardsShapeErrors) {
  const auto bad = [](auto edit, const std::string& msg) {
    pb::EvalRequest r;
    edit(r);
    EXPECT_THAT(FromProto(r), StatusIs(kInvalid, Eq(msg)));
  };
  bad(
      [](pb::EvalRequest& r) {
        for (int i = 0; i < 17; ++i) r.add_sampling();
      },
      "sampling has 17 settings; at most 16");
  bad([](pb::EvalRequest& r) { r.add_policies("greedy"); },
      "unknown policy 'greedy' (known: sample, argmax, selector (DFlash 2), match)");
  bad([](pb::EvalRequest& r) { r.set_ci("jackknife"); },
      "ci must be bootstrap or none (empty = bootstrap); got 'jackknife'");
  bad([](pb::EvalRequest& r) { r.set_ci_resamples(-1); }, "ci_resamples must be >= 0; got -1");
  bad([](pb::EvalRequest& r) { r.set_ci_resamples(100001); },
      "ci_resamples must be <= 100000; got 100001");
  bad([](pb::EvalRequest& r) { r.set_shards(-1); }, "shards must be >= 0; got -1");
  bad([](pb::EvalRequest& r) { r.set_shards(4097); }, "shards must be <= 4096; got 4097");
}

TEST_F(EvalConvertTest, ResultExtrasOnlyWhenComputed) {
  types::EvalResult r;
  r.mode = types::Mode::kAnchor;
  types::PositionMetrics reached, unreached;
  reached.position = 1;
  reached.counted = 2;
  unreached.position = 2;
  r.positions = {reached, unreached};
  r.selector_top_k = 4;
  r.first_miss.all_accepted = 1;
  r.first_miss.coverage_miss = 2;
  r.first_miss.ranking_error = 3;
  r.target_consistency.positions = 10;
  r.target_consistency.matches = 9;
  r.target_consistency.fraction = 0.9;
  types::DatasetResult d;
  d.dataset = "gsm8k";
  d.result.blocks = 7;
  r.suite_results = {d};
  pb::EvalResult out;
  ToProto(r, &out);
  EXPECT_EQ(out.mode(), pb::EVAL_MODE_ANCHOR);
  EXPECT_FALSE(out.positions(0).unavailable());
  EXPECT_TRUE(out.positions(1).unavailable());  // nobody reached it: not a rate of 0
  ASSERT_TRUE(out.has_first_miss());
  EXPECT_EQ(out.first_miss().all_accepted(), 1);
  EXPECT_EQ(out.first_miss().coverage_miss(), 2);
  EXPECT_EQ(out.first_miss().ranking_error(), 3);
  ASSERT_TRUE(out.has_target_consistency());
  EXPECT_EQ(out.target_consistency().matches(), 9);
  EXPECT_DOUBLE_EQ(out.target_consistency().fraction(), 0.9);
  ASSERT_EQ(out.suite_results_size(), 1);
  EXPECT_EQ(out.suite_results(0).dataset(), "gsm8k");
  EXPECT_EQ(out.suite_results(0).result().blocks(), 7);
  EXPECT_FALSE(pb::EvalResult().has_target_consistency());
}

}  // namespace
}  // namespace dflash::service
