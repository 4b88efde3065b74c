// File: field_table.h
// The machinery of a field table: a struct's plain fields as (name, member
// pointer, flags), visited in order by ForEachField. The tables themselves
// are in eval_result_fields.h (the result) and eval_options_fields.h (the
// request); the store's JSON (store/field_json.h), the proto conversion
// (service/field_proto.h) and the web view walk them, so a field is
// described once.
//
//   ForEachField<types::ShardPlacement>([&](const auto& f) {
//     Print(f.name, shard.*f.member);
//   });
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace dflash::types {

// How one field departs from the plain rule (stored under its name, on the
// wire under the same name).
enum FieldFlag : unsigned {
  kFieldPlain = 0,
  // The stored JSON leaves it out when empty (vector, string) or unset
  // (optional), as records always did for it.
  kOmitWhenEmpty = 1u << 0,
  // Stored, but not on the wire: no proto field of that name.
  kStoreOnly = 1u << 1,
  // The stored JSON must hold it (the first records did): reading a record
  // without it throws, as for a record this code never wrote.
  kRequired = 1u << 2,
  // Checked as it comes off the wire (service/field_proto.h): a name (at
  // most kMaxNameBytes, no control characters), a count or size (>= 0).
  kName = 1u << 3,
  kNonNegative = 1u << 4,
};

template <class S, class T>
struct Field {
  using Type = T;
  const char* name;
  T S::*member;
  unsigned flags;
};

template <class S, class T>
constexpr Field<S, T> MakeField(const char* name, T S::*member, unsigned flags = kFieldPlain) {
  return {name, member, flags};
}

// Specialised per described struct: `static constexpr auto kFields =
// std::make_tuple(MakeField(...), ...)`.
template <class S>
struct FieldTable;

template <class S, class = void>
struct HasFieldTable : std::false_type {};
template <class S>
struct HasFieldTable<S, std::void_t<decltype(FieldTable<S>::kFields)>> : std::true_type {};
template <class S>
inline constexpr bool kHasFieldTable = HasFieldTable<S>::value;

// Calls visit(field) for each field of S's table, in table order.
template <class S, class Visit>
void ForEachField(Visit&& visit) {
  std::apply([&](const auto&... f) { (visit(f), ...); }, FieldTable<S>::kFields);
}

template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};
template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

// A vector of described structs (a repeated sub-message on the wire).
template <class T>
struct IsTableVector : std::false_type {};
template <class T>
struct IsTableVector<std::vector<T>> : HasFieldTable<T> {};

// A number, bool or string: one value the JSON, the proto and a table cell
// all hold as is.
template <class T>
inline constexpr bool kIsScalar = std::is_arithmetic_v<T> || std::is_same_v<T, std::string>;

// Empty as kOmitWhenEmpty means it; other values never are.
template <class T>
bool IsEmptyValue(const T& v) {
  if constexpr (IsVector<T>::value || std::is_same_v<T, std::string>) {
    return v.empty();
  } else if constexpr (IsOptional<T>::value) {
    return !v.has_value();
  } else {
    return false;
  }
}

}  // namespace dflash::types
