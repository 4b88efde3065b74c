// format_fields: the --detail lines for result fields no section shows,
// found by reflection, so a field added to eval.proto is printed unedited.
#include "client/format_fields.h"

#include <google/protobuf/descriptor.h>

#include "client/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::client {
namespace {

namespace gp = ::google::protobuf;
using FD = gp::FieldDescriptor;
using ::testing::HasSubstr;
using ::testing::Not;

class FormatFieldsTest : public ::testing::Test {};

TEST_F(FormatFieldsTest, DetailListsSetFieldsNoSectionShows) {
  pb::EvalResult r;
  r.set_tau(2.25);
  r.set_context_positions(1234);
  r.set_drafter_fingerprint("sha:abc");
  const std::string detail = FormatEvalResult(r, /*detail=*/true);
  // In field-number order.
  EXPECT_THAT(detail, HasSubstr("other fields\n  drafter_fingerprint          sha:abc\n"
                                "  context_positions            1234\n"));
  // tau has its own line; unset fields are not listed.
  EXPECT_THAT(detail.substr(detail.find("other fields")), Not(HasSubstr("tau")));
  EXPECT_THAT(detail, Not(HasSubstr("target_fingerprint")));
  EXPECT_THAT(FormatEvalResult(r, /*detail=*/false), Not(HasSubstr("other fields")));
}

TEST_F(FormatFieldsTest, NothingSetNothingListed) {
  EXPECT_EQ(FormatOtherFields(pb::EvalResult(), {}), "");
}

// Every singular scalar field of the result, set through reflection as a
// new one would be, is listed by name with its value.
TEST_F(FormatFieldsTest, EveryScalarFieldIsListedByName) {
  pb::EvalResult r;
  const gp::Reflection& refl = *r.GetReflection();
  const gp::Descriptor& d = *r.GetDescriptor();
  for (int i = 0; i < d.field_count(); ++i) {
    const FD* f = d.field(i);
    if (f->is_repeated()) continue;
    switch (f->cpp_type()) {
      case FD::CPPTYPE_INT32: refl.SetInt32(&r, f, 7); break;
      case FD::CPPTYPE_INT64: refl.SetInt64(&r, f, 7); break;
      case FD::CPPTYPE_DOUBLE: refl.SetDouble(&r, f, 0.25); break;
      case FD::CPPTYPE_BOOL: refl.SetBool(&r, f, true); break;
      case FD::CPPTYPE_STRING: refl.SetString(&r, f, "x"); break;
      case FD::CPPTYPE_ENUM: refl.SetEnumValue(&r, f, 1); break;
      default: continue;
    }
  }
  const std::string out = FormatOtherFields(r, {"tau"});
  for (int i = 0; i < d.field_count(); ++i) {
    const FD* f = d.field(i);
    if (f->is_repeated() || f->cpp_type() == FD::CPPTYPE_MESSAGE) continue;
    if (f->name() == "tau") {
      EXPECT_THAT(out, Not(HasSubstr("  tau ")));
    } else {
      EXPECT_THAT(out, HasSubstr("  " + f->name() + " ")) << f->name();
    }
  }
  EXPECT_THAT(out, HasSubstr("  positions_to_first_miss      true\n"));
  EXPECT_THAT(out, HasSubstr("  mode                         EVAL_MODE_ANCHOR\n"));
  EXPECT_THAT(out, HasSubstr("  accept_length_pooled         0.25\n"));
}

}  // namespace
}  // namespace dflash::client
