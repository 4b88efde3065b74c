// The field tables (types/eval_result_fields.h) against eval.proto: every
// table field has a proto field of its name and a matching type, every
// proto field is in a table or converted by hand (the list below), and a
// filled result reaches the proto field by field. A field added to one side
// only fails here, by name.
#include "service/field_proto.h"

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/eval_convert.h"
#include "test_util/field_fill.h"

namespace dflash::service {
namespace {

namespace gp = ::google::protobuf;
namespace t = ::dflash::types;
using FD = gp::FieldDescriptor;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// Proto fields eval_convert.cc sets by hand, by message (eval_result_fields.h
// says why each is not in a table).
const std::map<std::string, std::set<std::string>> kHandConverted = {
    {"EvalResult", {"mode", "first_miss", "target_consistency", "suite_results"}},
    {"PositionMetrics", {"unavailable"}},  // counted == 0, derived on the wire
};

template <class S>
void CheckTable(const gp::Descriptor& d, std::vector<std::string>& problems);

template <class T>
std::string ScalarProblem(const FD& f) {
  const FD::CppType c = f.cpp_type();
  if constexpr (std::is_same_v<T, bool>) {
    return c == FD::CPPTYPE_BOOL ? "" : "is not bool";
  } else if constexpr (std::is_integral_v<T>) {
    // int64 members fit the proto's older int32 counts too.
    const bool integer = c == FD::CPPTYPE_INT32 || c == FD::CPPTYPE_INT64 ||
                         c == FD::CPPTYPE_UINT32 || c == FD::CPPTYPE_UINT64;
    return integer ? "" : "is not an integer";
  } else if constexpr (std::is_floating_point_v<T>) {
    return c == FD::CPPTYPE_DOUBLE ? "" : "is not double";
  } else {
    static_assert(std::is_same_v<T, std::string>);
    return c == FD::CPPTYPE_STRING ? "" : "is not string";
  }
}

// Whether f's values (repeatedness aside) can hold a T; nested tables are
// checked against their message in turn.
template <class T>
std::string ElementProblem(const FD& f, std::vector<std::string>& problems) {
  const auto message = [&f](const std::string& name) -> std::string {
    if (f.cpp_type() == FD::CPPTYPE_MESSAGE && f.message_type()->name() == name) return "";
    return "is not a " + name + " message";
  };
  if constexpr (t::kHasFieldTable<T>) {
    if (f.cpp_type() != FD::CPPTYPE_MESSAGE) return "is not a message";
    CheckTable<T>(*f.message_type(), problems);
    return "";
  } else if constexpr (std::is_same_v<T, t::SamplingSetting>) {
    return message("SamplingSetting");
  } else if constexpr (std::is_same_v<T, std::optional<t::Interval>>) {
    return message("Interval");
  } else if constexpr (t::IsOptional<T>::value) {
    return ElementProblem<typename T::value_type>(f, problems);
  } else {
    return ScalarProblem<T>(f);
  }
}

template <class T>
std::string TypeProblem(const FD& f, std::vector<std::string>& problems) {
  constexpr bool kRepeated = t::IsVector<T>::value;
  if (f.is_repeated() != kRepeated) return kRepeated ? "is not repeated" : "is repeated";
  if constexpr (kRepeated) {
    return ElementProblem<typename T::value_type>(f, problems);
  } else {
    return ElementProblem<T>(f, problems);
  }
}

// One line per mismatch, "Message.field: what".
template <class S>
void CheckTable(const gp::Descriptor& d, std::vector<std::string>& problems) {
  std::set<std::string> in_table;
  t::ForEachField<S>([&](const auto& f) {
    using T = typename std::decay_t<decltype(f)>::Type;
    const FD* fd = d.FindFieldByName(f.name);
    const std::string where = d.name() + "." + f.name;
    if (f.flags & t::kStoreOnly) {
      if (fd != nullptr) problems.push_back(where + ": marked kStoreOnly, but the proto has it");
      return;
    }
    if (fd == nullptr) {
      problems.push_back(where + ": in the table, not in the proto");
      return;
    }
    in_table.insert(f.name);
    const std::string problem = TypeProblem<T>(*fd, problems);
    if (!problem.empty()) problems.push_back(where + ": " + problem);
  });
  const auto hand = kHandConverted.find(d.name());
  for (int i = 0; i < d.field_count(); ++i) {
    const std::string& name = d.field(i)->name();
    if (in_table.count(name) > 0) continue;
    if (hand != kHandConverted.end() && hand->second.count(name) > 0) continue;
    problems.push_back(d.name() + "." + name + ": in the proto, not in the table nor by hand");
  }
}

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
  CheckTable<t::EvalResult>(*pb::EvalResult::descriptor(), problems);
  CheckTable<t::TargetConsistency>(*pb::TargetConsistency::descriptor(), problems);
  EXPECT_THAT(problems, IsEmpty());
}

// The check itself: a table held against another message names each field
// that is on one side only, and each type that differs.
TEST_F(FieldProtoTest, TheCheckNamesAFieldOnOneSideOnly) {
  std::vector<std::string> problems;
  CheckTable<t::ShardPlacement>(*pb::SliceResult::descriptor(), problems);
  EXPECT_THAT(problems, Contains("SliceResult.first: in the table, not in the proto"));
  EXPECT_THAT(problems, Contains("SliceResult.kind: in the proto, not in the table nor by hand"));
  // blocks is an int64 on both sides: nothing to say.
  EXPECT_THAT(problems, Not(Contains(HasSubstr("SliceResult.blocks"))));
}

TEST_F(FieldProtoTest, TheCheckNamesATypeThatDiffers) {
  std::vector<std::string> problems;
  // GateVerdict's `value` is a double, SliceResult's a string.
  CheckTable<t::GateVerdict>(*pb::SliceResult::descriptor(), problems);
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
