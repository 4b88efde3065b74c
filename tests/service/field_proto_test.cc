// The field tables (types/eval_result_fields.h) against eval.proto: every
// table field has a proto field of its name and a matching type, every
// proto field is in a table or converted by hand (the list below), and a
// filled result reaches the proto field by field. A field added to one side
// only fails here, by name.
#include "service/field_proto.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/eval_convert.h"
#include "test_util/field_fill.h"
#include "test_util/proto_table_check.h"

namespace dflash::service {
namespace {

namespace gp = ::google::protobuf;
namespace t = ::dflash::types;
using FD = gp::FieldDescriptor;
using ::dflash::testing::CheckTables;
using ::dflash::testing::HandConverted;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// Proto fields eval_convert.cc sets by hand, by message (eval_result_fields.h
// says why each is not in a table).
const HandConverted kHandSetResultFields = {
    {"EvalResult", {"mode", "first_miss", "target_consistency", "suite_results"}},
    {"PositionMetrics", {"unavailable"}},  // counted == 0, derived on the wire
};

double Number(const gp::Message& m, const FD& f, int i) {
  const gp::Reflection& r = *m.GetReflection();
  switch (f.cpp_type()) {
    case FD::CPPTYPE_INT32: return i < 0 ? r.GetInt32(m, &f) : r.GetRepeatedInt32(m, &f, i);
    case FD::CPPTYPE_INT64:
      return static_cast<double>(i < 0 ? r.GetInt64(m, &f) : r.GetRepeatedInt64(m, &f, i));
    case FD::CPPTYPE_DOUBLE: return i < 0 ? r.GetDouble(m, &f) : r.GetRepeatedDouble(m, &f, i);
    default: return std::nan("");
  }
}

// Value v of the field at `path` against f in m (index i of a repeated one).
template <class T>
void ExpectScalar(const T& v, const gp::Message& m, const FD& f, int i, const std::string& path) {
  const gp::Reflection& r = *m.GetReflection();
  if constexpr (std::is_same_v<T, std::string>) {
    EXPECT_EQ(i < 0 ? r.GetString(m, &f) : r.GetRepeatedString(m, &f, i), v) << path;
  } else if constexpr (std::is_same_v<T, bool>) {
    EXPECT_EQ(i < 0 ? r.GetBool(m, &f) : r.GetRepeatedBool(m, &f, i), v) << path;
  } else {
    EXPECT_EQ(Number(m, f, i), static_cast<double>(v)) << path;
  }
}

template <class S>
void ExpectProtoMatches(const S& s, const gp::Message& m, const std::string& path);

template <class T>
void ExpectValue(const T& v, const gp::Message& m, const FD& f, const std::string& path) {
  const gp::Reflection& r = *m.GetReflection();
  if constexpr (t::kHasFieldTable<T>) {
    ExpectProtoMatches(v, r.GetMessage(m, &f), path);
  } else if constexpr (std::is_same_v<T, t::SamplingSetting>) {
    const auto& p = static_cast<const pb::SamplingSetting&>(r.GetMessage(m, &f));
    EXPECT_EQ(p.temperature(), v.temperature) << path;
    EXPECT_EQ(p.policy(), "argmax") << path;
  } else if constexpr (std::is_same_v<T, std::optional<t::Interval>>) {
    ASSERT_EQ(r.HasField(m, &f), v.has_value()) << path;
    if (!v) return;
    const auto& p = static_cast<const pb::Interval&>(r.GetMessage(m, &f));
    EXPECT_EQ(p.lo(), v->lo) << path;
    EXPECT_EQ(p.hi(), v->hi) << path;
  } else if constexpr (t::IsOptional<T>::value) {
    ASSERT_EQ(r.HasField(m, &f), v.has_value()) << path;
    if (v) ExpectValue(*v, m, f, path);
  } else if constexpr (t::IsVector<T>::value) {
    ASSERT_EQ(static_cast<size_t>(r.FieldSize(m, &f)), v.size()) << path;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string at = path + "[" + std::to_string(i) + "]";
      if constexpr (t::kHasFieldTable<typename T::value_type>) {
        ExpectProtoMatches(v[i], r.GetRepeatedMessage(m, &f, static_cast<int>(i)), at);
      } else {
        ExpectScalar(v[i], m, f, static_cast<int>(i), at);
      }
    }
  } else {
    ExpectScalar(v, m, f, -1, path);
  }
}

template <class S>
void ExpectProtoMatches(const S& s, const gp::Message& m, const std::string& path) {
  t::ForEachField<S>([&](const auto& f) {
    if (f.flags & t::kStoreOnly) return;
    const FD* fd = m.GetDescriptor()->FindFieldByName(f.name);
    ASSERT_NE(fd, nullptr) << path << "." << f.name;
    ExpectValue(s.*f.member, m, *fd, path + "." + f.name);
  });
}

class FieldProtoTest : public ::testing::Test {};

TEST_F(FieldProtoTest, EveryFieldIsOnBothSidesWithOneType) {
  std::vector<std::string> problems;
  CheckTables<t::EvalResult>(*pb::EvalResult::descriptor(), kHandSetResultFields, problems);
  CheckTables<t::TargetConsistency>(*pb::TargetConsistency::descriptor(), kHandSetResultFields,
                                    problems);
  EXPECT_THAT(problems, IsEmpty());
}

// The check itself: a table held against another message names each field
// that is on one side only, and each type that differs.
TEST_F(FieldProtoTest, TheCheckNamesAFieldOnOneSideOnly) {
  std::vector<std::string> problems;
  CheckTables<t::ShardPlacement>(*pb::SliceResult::descriptor(), kHandSetResultFields, problems);
  EXPECT_THAT(problems, Contains("SliceResult.first: in the table, not in the proto"));
  EXPECT_THAT(problems, Contains("SliceResult.kind: in the proto, not in the table nor by hand"));
  // blocks is an int64 on both sides: nothing to say.
  EXPECT_THAT(problems, Not(Contains(HasSubstr("SliceResult.blocks"))));
}

TEST_F(FieldProtoTest, TheCheckNamesATypeThatDiffers) {
  std::vector<std::string> problems;
  // GateVerdict's `value` is a double, SliceResult's a string.
  CheckTables<t::GateVerdict>(*pb::SliceResult::descriptor(), kHandSetResultFields, problems);
  EXPECT_THAT(problems, Contains("SliceResult.value: is not double"));
}

TEST_F(FieldProtoTest, AFilledResultReachesEveryProtoField) {
  t::EvalResult r;
  int64_t k = 1;
  ::dflash::testing::FillFields(r, k);
  pb::EvalResult p;
  ToProto(r, &p);
  ExpectProtoMatches(r, p, "EvalResult");
  EXPECT_TRUE(p.positions(0).unavailable() == (r.positions[0].counted == 0));
}

}  // namespace
}  // namespace dflash::service
