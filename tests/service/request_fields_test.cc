// The request's field tables (types/eval_options_fields.h) against
// EvalRequest: every table field has a proto field of its name and a
// matching type, every proto field is in a table or converted by hand (the
// list below), and a filled request goes to the proto and back field by
// field, through the tables' checks. A field added to one side only fails
// here, by name.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/eval_convert.h"
#include "service/field_proto.h"
#include "service/job_convert.h"
#include "test_util/field_fill.h"
#include "test_util/proto_table_check.h"
#include "test_util/status_matchers.h"

namespace dflash::service {
namespace {

namespace t = ::dflash::types;
using ::dflash::testing::CheckTables;
using ::dflash::testing::HandConverted;
using ::testing::Contains;
using ::testing::IsEmpty;

// EvalRequest fields set by hand: the options eval_options_fields.h leaves
// out of its tables (eval_convert.cc), and the job's own (job_convert.cc).
const HandConverted kHandSetRequestFields = {
    {"EvalRequest",
     {"mode",
      "anchors",
      "semantics",
      "metrics",
      "sampling",
      "policies",
      "ci",
      "ci_resamples",
      "run",
      "step",
      "labels",
      "unload_after",
      "gate",
      "gate_metric",
      "gate_min_delta",
      "gate_allow_recipe_mismatch",
      "gate_floor",
      "suite_datasets",
      "dataset_path",
      "target_path"}},
};

// Every table field set to its own value, valid on the wire (shards stays
// under its cap).
t::EvalParams FilledParams() {
  t::EvalParams p;
  int64_t k = 1;
  ::dflash::testing::FillFields(p, k);
  ::dflash::testing::FillFields(p.options, k);
  return p;
}

class RequestFieldsTest : public ::testing::Test {};

TEST_F(RequestFieldsTest, EveryFieldIsOnBothSidesWithOneType) {
  std::vector<std::string> problems;
  CheckTables<t::EvalParams, t::EvalOptions>(*pb::EvalRequest::descriptor(), kHandSetRequestFields,
                                             problems);
  EXPECT_THAT(problems, IsEmpty());
}

// The check itself: a request field left out of the tables, or a table
// field the message lacks, is named.
TEST_F(RequestFieldsTest, TheCheckNamesAFieldOnOneSideOnly) {
  std::vector<std::string> problems;
  CheckTables<t::EvalOptions>(*pb::EvalRequest::descriptor(), kHandSetRequestFields, problems);
  EXPECT_THAT(problems,
              Contains("EvalRequest.drafter: in the proto, not in the table nor by hand"));
  problems.clear();
  CheckTables<t::EvalOptions>(*pb::SamplingSetting::descriptor(), kHandSetRequestFields, problems);
  EXPECT_THAT(problems, Contains("SamplingSetting.max_samples: in the table, not in the proto"));
  problems.clear();
  CheckTables<t::EvalParams, t::EvalParams>(*pb::EvalRequest::descriptor(), kHandSetRequestFields,
                                            problems);
  EXPECT_THAT(problems, Contains("EvalRequest.target: in two tables"));
}

// The tables are the whole story: a field added to one goes to the wire and
// back (a job's request as listed, then submitted again) with no edit here.
TEST_F(RequestFieldsTest, AFilledRequestRoundTripsThroughTheProto) {
  types::JobRequest want;
  want.params = FilledParams();
  pb::EvalRequest wire;
  ToProto(want, &wire);
  auto got = FromProto(wire);
  ASSERT_TRUE(got.ok()) << got.status();
  ::dflash::testing::ExpectFieldsEqual(*got, want.params, "params");
  t::ForEachField<t::EvalOptions>([&](const auto& f) {
    const std::string path = std::string("options.") + f.name;
    if (f.flags & t::kStoreOnly) {  // not on the wire: the default comes back
      EXPECT_EQ(got->options.*f.member, t::EvalOptions{}.*f.member) << path;
    } else {
      ::dflash::testing::ExpectFieldsEqual(got->options.*f.member, want.params.options.*f.member,
                                           path);
    }
  });
}

// Each flagged field's check, its message naming the field.
TEST_F(RequestFieldsTest, TheTablesChecksNameTheField) {
  pb::EvalRequest wire;
  wire.set_dataset(std::string("d\x01", 2));
  EXPECT_THAT(FromProto(wire).status(),
              ::dflash::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                          "dataset contains control character 0x01 at byte 1"));
  wire.Clear();
  wire.set_block_size(-2);
  EXPECT_THAT(FromProto(wire).status(),
              ::dflash::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                          "block_size must be >= 0; got -2"));
  // seed is not flagged: any value goes.
  wire.Clear();
  wire.set_seed(~uint64_t{0});
  auto p = FromProto(wire);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->options.seed, ~uint64_t{0});
}

}  // namespace
}  // namespace dflash::service
