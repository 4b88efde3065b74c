// File: proto_table_check.h
// Field tables (types/field_table.h) held against their proto message:
// every table field has a proto field of its name and a matching type, and
// every proto field is in a table or in the list of fields converted by
// hand. One line per mismatch, "Message.field: what", so a field added to
// one side only fails naming it. One message may take several tables (an
// EvalRequest holds EvalParams' and EvalOptions' fields).
//
//   std::vector<std::string> problems;
//   CheckTables<types::EvalResult>(*pb::EvalResult::descriptor(), kHand, problems);
//   EXPECT_THAT(problems, IsEmpty());
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <google/protobuf/descriptor.h>

#include "types/eval_options_fields.h"
#include "types/eval_result_fields.h"

namespace dflash::testing {

// Proto fields set by hand, by message name.
using HandConverted = std::map<std::string, std::set<std::string>>;

namespace proto_table_internal {

namespace gp = ::google::protobuf;
namespace t = ::dflash::types;
using FD = gp::FieldDescriptor;

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

}  // namespace proto_table_internal

template <class... S>
void CheckTables(const google::protobuf::Descriptor& d, const HandConverted& hand,
                 std::vector<std::string>& problems);

namespace proto_table_internal {

// Whether f's values (repeatedness aside) can hold a T; nested tables are
// checked against their message in turn.
template <class T>
std::string ElementProblem(const FD& f, const HandConverted& hand,
                           std::vector<std::string>& problems) {
  const auto message = [&f](const std::string& name) -> std::string {
    if (f.cpp_type() == FD::CPPTYPE_MESSAGE && f.message_type()->name() == name) return "";
    return "is not a " + name + " message";
  };
  if constexpr (t::kHasFieldTable<T>) {
    if (f.cpp_type() != FD::CPPTYPE_MESSAGE) return "is not a message";
    CheckTables<T>(*f.message_type(), hand, problems);
    return "";
  } else if constexpr (std::is_same_v<T, t::SamplingSetting>) {
    return message("SamplingSetting");
  } else if constexpr (std::is_same_v<T, std::optional<t::Interval>>) {
    return message("Interval");
  } else if constexpr (t::IsOptional<T>::value) {
    return ElementProblem<typename T::value_type>(f, hand, problems);
  } else {
    return ScalarProblem<T>(f);
  }
}

template <class T>
std::string TypeProblem(const FD& f, const HandConverted& hand,
                        std::vector<std::string>& problems) {
  constexpr bool kRepeated = t::IsVector<T>::value;
  if (f.is_repeated() != kRepeated) return kRepeated ? "is not repeated" : "is repeated";
  if constexpr (kRepeated) {
    return ElementProblem<typename T::value_type>(f, hand, problems);
  } else {
    return ElementProblem<T>(f, hand, problems);
  }
}

// S's fields against d; the proto fields they stand for go into `claimed`.
template <class S>
void ClaimTable(const gp::Descriptor& d, const HandConverted& hand, std::set<std::string>& claimed,
                std::vector<std::string>& problems) {
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
    if (!claimed.insert(f.name).second) problems.push_back(where + ": in two tables");
    const std::string problem = TypeProblem<T>(*fd, hand, problems);
    if (!problem.empty()) problems.push_back(where + ": " + problem);
  });
}

}  // namespace proto_table_internal

template <class... S>
void CheckTables(const google::protobuf::Descriptor& d, const HandConverted& hand,
                 std::vector<std::string>& problems) {
  std::set<std::string> claimed;
  (proto_table_internal::ClaimTable<S>(d, hand, claimed, problems), ...);
  const auto by_hand = hand.find(d.name());
  for (int i = 0; i < d.field_count(); ++i) {
    const std::string& name = d.field(i)->name();
    if (claimed.count(name) > 0) continue;
    if (by_hand != hand.end() && by_hand->second.count(name) > 0) continue;
    problems.push_back(d.name() + "." + name + ": in the proto, not in the table nor by hand");
  }
}

}  // namespace dflash::testing
