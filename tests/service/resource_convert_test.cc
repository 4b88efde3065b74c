// service/resource_convert: the dtype and kind mappings, the load requests
// (their shared fields and the dataset's counts and layer lists, each shape
// check with its message) and the load response's optional parts.
#include "service/resource_convert.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::service {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::Eq;

using ::dflash::testing::kInvalid;

class ResourceConvertTest : public ::testing::Test {};

TEST_F(ResourceConvertTest, DTypeAndKindMappings) {
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

TEST_F(ResourceConvertTest, LoadRequestsShareTheirFieldChecks) {
  pb::LoadTargetRequest t;
  t.set_name("qwen");
  t.set_path("/srv/t");
  t.set_dtype(pb::DTYPE_BF16);
  t.set_device("cuda:1");
  t.set_load_final_norm(true);
  ASSERT_OK_AND_ASSIGN(resident::LoadTargetParams p, FromProto(t));
  EXPECT_EQ(p.name, "qwen");
  EXPECT_EQ(p.path, "/srv/t");
  EXPECT_EQ(p.dtype, "bf16");
  EXPECT_EQ(p.device, "cuda:1");
  EXPECT_TRUE(p.load_final_norm);
  t.set_dtype(static_cast<pb::DType>(7));
  EXPECT_THAT(FromProto(t), StatusIs(kInvalid, Eq("dtype 7 is not a DType: 0 (the default), 1 "
                                                  "(fp32), 2 (fp16) or 3 (bf16)")));
  pb::LoadDrafterRequest d;
  d.set_name("n\t");
  EXPECT_THAT(FromProto(d),
              StatusIs(kInvalid, Eq("name contains control character 0x09 at byte 1")));
  d.set_name("");
  d.set_device(std::string(300, 'c'));
  EXPECT_THAT(FromProto(d),
              StatusIs(kInvalid, Eq("device is 300 bytes long; at most 256 are allowed")));
}

TEST_F(ResourceConvertTest, DatasetLoadShapeErrors) {
  const auto bad = [](auto edit, const std::string& msg) {
    pb::LoadDatasetRequest r;
    edit(r);
    EXPECT_THAT(FromProto(r), StatusIs(kInvalid, Eq(msg)));
  };
  bad([](pb::LoadDatasetRequest& r) { r.set_max_samples(-1); }, "max_samples must be >= 0; got -1");
  bad([](pb::LoadDatasetRequest& r) { r.set_stream_budget_bytes(-5); },
      "stream_budget_bytes must be >= 0; got -5");
  bad([](pb::LoadDatasetRequest& r) { r.set_target("t\x7f"); },
      "target contains control character 0x7f at byte 1");
  bad(
      [](pb::LoadDatasetRequest& r) {
        for (int i = 0; i < 17; ++i) (*r.mutable_layer_ids())["k" + std::to_string(i)];
      },
      "layer_ids has 17 feature keys; at most 16 are allowed");
  bad(
      [](pb::LoadDatasetRequest& r) {
        for (int k = 0; k < 2; ++k) {
          auto& ids = (*r.mutable_layer_ids())["k" + std::to_string(k)];
          for (int i = 0; i < 513; ++i) ids.add_ids(i);
        }
      },
      "layer_ids lists 1026 layers; at most 1024 are allowed");
  bad([](pb::LoadDatasetRequest& r) { (*r.mutable_layer_ids())["a\nb"].add_ids(1); },
      "layer_ids key contains control character 0x0a at byte 1");
}

TEST_F(ResourceConvertTest, DatasetLoadFields) {
  pb::LoadDatasetRequest r;
  r.set_max_samples(8);
  r.set_skip_bad_samples(true);
  r.set_stream(true);
  r.set_stream_budget_bytes(1 << 20);
  r.set_target("qwen");
  (*r.mutable_layer_ids())["hidden_states"].add_ids(3);
  (*r.mutable_layer_ids())["hidden_states"].add_ids(1);
  ASSERT_OK_AND_ASSIGN(resident::LoadDatasetParams p, FromProto(r));
  EXPECT_EQ(p.max_samples, 8);
  EXPECT_TRUE(p.skip_bad_samples);
  EXPECT_TRUE(p.stream);
  EXPECT_EQ(p.stream_budget_bytes, 1 << 20);
  EXPECT_EQ(p.target, "qwen");
  EXPECT_THAT(p.layer_ids.at("hidden_states"), ::testing::ElementsAre(3, 1));
}

TEST_F(ResourceConvertTest, LoadResponseOptionalParts) {
  resident::LoadResult in;
  in.resource.kind = resident::ResourceKind::kDataset;
  in.resource.name = "gsm8k";
  in.reused = true;
  pb::LoadResponse out;
  ToProto(in, &out);
  EXPECT_EQ(out.resource().kind(), pb::RESOURCE_KIND_DATASET);
  EXPECT_TRUE(out.reused());
  EXPECT_FALSE(out.has_report());
  EXPECT_FALSE(out.has_target_consistency());
  weights::WeightReport report;
  weights::TensorEntry e;
  e.name = "w";
  e.status = weights::EntryStatus::kMissing;
  report.tensors = {e};
  in.report = report;
  in.consistency_target = "qwen";
  in.target_consistency.positions = 4;
  in.target_consistency.matches = 3;
  pb::LoadResponse full;
  ToProto(in, &full);
  ASSERT_EQ(full.report().tensors_size(), 1);
  EXPECT_EQ(full.report().tensors(0).status(), pb::TensorEntry::STATUS_MISSING);
  EXPECT_FALSE(full.report().tensors(0).has_stats());  // none computed
  EXPECT_EQ(full.consistency_target(), "qwen");
  EXPECT_EQ(full.target_consistency().matches(), 3);
}

}  // namespace
}  // namespace dflash::service
