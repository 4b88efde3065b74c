// service/proto_convert: EvalRequest -> core / job request -> EvalRequest
// round trips (defaults normalised), every shape check with its message, the
// enum mappings and the EvalResult fields.
#include "service/proto_convert.h"

#include <string>

#include <google/protobuf/util/message_differencer.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "resident/resource.h"
#include "test_util/status_matchers.h"

namespace dflash::service {
namespace {

using ::dflash::testing::IsOk;
using ::dflash::testing::StatusIs;
using ::google::protobuf::util::MessageDifferencer;
using ::testing::Eq;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

pb::EvalRequest FullRequest() {
  pb::EvalRequest r;
  r.set_drafter("step-4000");
  r.set_dataset("gsm8k");
  r.set_target("qwen3-8b");
  r.set_mode(pb::EVAL_MODE_REPLAY);
  r.set_max_samples(12);
  r.set_max_blocks(7);
  r.set_anchors(pb::ANCHOR_STRATEGY_RANDOM);
  r.set_seed(uint64_t{1} << 40);
  r.set_block_size(8);
  r.set_max_new_tokens(256);
  r.set_semantics("zlab-2025");
  r.set_run("run-a");
  r.set_step(4000);
  (*r.mutable_labels())["lr"] = "3e-4";
  (*r.mutable_labels())["team/owner"] = "eval";
  r.set_unload_after(true);
  r.set_metrics("acceptance");
  r.set_full_positions(true);
  return r;
}

class ProtoConvertTest : public ::testing::Test {};

TEST_F(ProtoConvertTest, EvalRequestToCoreParams) {
  ASSERT_OK_AND_ASSIGN(types::EvalParams p, FromProto(FullRequest()));
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

TEST_F(ProtoConvertTest, DefaultsOfAnEmptyRequest) {
  ASSERT_OK_AND_ASSIGN(types::EvalParams p, FromProto(pb::EvalRequest()));
  EXPECT_EQ(p.options.mode, types::Mode::kAnchor);
  EXPECT_EQ(p.options.anchors, types::AnchorStrategy::kEven);
  EXPECT_EQ(p.options.semantics, types::Semantics::kZlabCurrent);
  EXPECT_EQ(p.options.max_samples, 0);
  EXPECT_EQ(p.options.metrics, types::MetricSet::kAll);
  EXPECT_FALSE(p.options.full_positions);
}

TEST_F(ProtoConvertTest, JobRequestRoundTrip) {
  const pb::EvalRequest in = FullRequest();
  ASSERT_OK_AND_ASSIGN(auto job, JobRequestFromProto(in));
  pb::EvalRequest out;
  ToProto(job, &out);
  EXPECT_TRUE(MessageDifferencer::Equals(in, out)) << out.DebugString();
}

TEST_F(ProtoConvertTest, RoundTripNormalisesDefaults) {
  pb::EvalRequest in;
  in.set_dataset("d");
  in.set_checkpoint_path("/srv/models/step-5000");
  ASSERT_OK_AND_ASSIGN(auto job, JobRequestFromProto(in));
  pb::EvalRequest out;
  ToProto(job, &out);
  // What an empty field meant is written out.
  pb::EvalRequest want = in;
  want.set_mode(pb::EVAL_MODE_ANCHOR);
  want.set_anchors(pb::ANCHOR_STRATEGY_EVEN);
  want.set_semantics("zlab-current");
  EXPECT_TRUE(MessageDifferencer::Equals(want, out)) << out.DebugString();
  // And a second trip changes nothing.
  ASSERT_OK_AND_ASSIGN(auto again, JobRequestFromProto(out));
  pb::EvalRequest out2;
  ToProto(again, &out2);
  EXPECT_TRUE(MessageDifferencer::Equals(out, out2));
}

TEST_F(ProtoConvertTest, EvalRequestShapeErrors) {
  auto with = [](auto edit) {
    pb::EvalRequest r = FullRequest();
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
  EXPECT_THAT(JobRequestFromProto(with([](pb::EvalRequest& r) { r.set_step(-1); })),
              StatusIs(kInvalid, Eq("step must be >= 0; got -1")));
  EXPECT_THAT(JobRequestFromProto(with([](pb::EvalRequest& r) { r.set_run("r\x7f"); })),
              StatusIs(kInvalid, Eq("run contains control character 0x7f at byte 1")));
  EXPECT_THAT(JobRequestFromProto(
                  with([](pb::EvalRequest& r) { (*r.mutable_labels())["bad key!"] = "v"; })),
              StatusIs(kInvalid, Eq("labels key 'bad key!' is not 1 to 63 letters, digits, "
                                    "'_', '-', '.', '/'")));
  EXPECT_THAT(
      JobRequestFromProto(with([](pb::EvalRequest& r) { (*r.mutable_labels())["lr"] = "a\tb"; })),
      StatusIs(kInvalid, Eq("labels['lr'] contains control character 0x09 at byte 1")));
}

TEST_F(ProtoConvertTest, NamesAndIds) {
  EXPECT_THAT(CheckName("run", ""), IsOk());
  EXPECT_THAT(CheckName("run", std::string(256, 'x')), IsOk());
  EXPECT_THAT(CheckName("run", "caf\xC3\xA9"), IsOk());  // UTF-8 is fine
  EXPECT_THAT(CheckId("job_id", ""), StatusIs(kInvalid, Eq("job_id is empty")));
  EXPECT_THAT(CheckId("job_id", "j\x01"),
              StatusIs(kInvalid, Eq("job_id contains control character 0x01 at byte 1")));
}

TEST_F(ProtoConvertTest, DTypeAndKindMappings) {
  for (const char* d : {"fp32", "fp16", "bf16"}) {
    ASSERT_OK_AND_ASSIGN(std::string back, DTypeFromProto(DTypeToProto(d)));
    EXPECT_EQ(back, d);
  }
  ASSERT_OK_AND_ASSIGN(std::string unspecified, DTypeFromProto(pb::DTYPE_UNSPECIFIED));
  EXPECT_EQ(unspecified, "");
  EXPECT_EQ(DTypeToProto("fp64"), pb::DTYPE_UNSPECIFIED);
  EXPECT_THAT(DTypeFromProto(static_cast<pb::DType>(9)),
              StatusIs(kInvalid, Eq("dtype 9 is not a DType: 0 (the default), 1 (fp32), 2 "
                                    "(fp16) or 3 (bf16)")));
  ASSERT_OK_AND_ASSIGN(resident::ResourceKind k, KindFromProto(pb::RESOURCE_KIND_DATASET));
  EXPECT_EQ(k, resident::ResourceKind::kDataset);
  ASSERT_OK_AND_ASSIGN(k, KindFromProto(pb::RESOURCE_KIND_TARGET));
  EXPECT_EQ(k, resident::ResourceKind::kTarget);
  ASSERT_OK_AND_ASSIGN(k, KindFromProto(pb::RESOURCE_KIND_DRAFTER));
  EXPECT_EQ(k, resident::ResourceKind::kDrafter);
  EXPECT_THAT(KindFromProto(static_cast<pb::ResourceKind>(0)),
              StatusIs(kInvalid, Eq("resource kind 0 is not one of target, drafter, dataset")));
}

TEST_F(ProtoConvertTest, EvalResultFields) {
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

}  // namespace
}  // namespace dflash::service
