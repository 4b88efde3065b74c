// File: field_json.h
// A described struct (types/field_table.h) <-> JSON, the stored record's
// form: an object keyed by the table's names, or for SampleSummary (one per
// sample) a positional array in table order. Read back, a key that is
// absent (a record from before the field) leaves the member's default, or
// throws for a kRequired one; a value of the wrong type throws
// nlohmann::json::exception, which RecordFromJson turns into a status.
//
//   nlohmann::json j = StructToJson(shard);
//   types::ShardPlacement back;
//   StructFromJson(j, back);
#pragma once

#include <optional>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/leaf_json.h"
#include "types/eval_options_fields.h"
#include "types/eval_result_fields.h"

namespace dflash::store {

// Per-sample summaries are the bulk of a record: arrays, not objects.
template <class S>
inline constexpr bool kPositionalJson = std::is_same_v<S, types::SampleSummary>;

template <class S>
nlohmann::json StructToJson(const S& s);
template <class S>
void StructFromJson(const nlohmann::json& j, S& s);

template <class T>
nlohmann::json ValueToJson(const T& v) {
  if constexpr (types::kHasFieldTable<T>) {
    return StructToJson(v);
  } else if constexpr (std::is_same_v<T, types::SamplingSetting>) {
    return SettingToJson(v);
  } else if constexpr (std::is_same_v<T, std::optional<types::Interval>>) {
    return IntervalToJson(v);
  } else if constexpr (types::IsOptional<T>::value) {
    return v ? ValueToJson(*v) : nlohmann::json(nullptr);
  } else if constexpr (types::IsTableVector<T>::value) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : v) out.push_back(StructToJson(e));
    return out;
  } else {
    static_assert(types::kIsScalar<T> || types::IsVector<T>::value, "no JSON form for this type");
    return nlohmann::json(v);
  }
}

template <class T>
void ValueFromJson(const nlohmann::json& j, T& out) {
  if constexpr (types::kHasFieldTable<T>) {
    StructFromJson(j, out);
  } else if constexpr (std::is_same_v<T, types::SamplingSetting>) {
    out = SettingFromJson(j);
  } else if constexpr (std::is_same_v<T, std::optional<types::Interval>>) {
    out = IntervalFromJson(j);
  } else if constexpr (types::IsOptional<T>::value) {
    out.reset();
    if (!j.is_null()) ValueFromJson(j, out.emplace());
  } else if constexpr (types::IsTableVector<T>::value) {
    out.clear();
    for (const nlohmann::json& e : j) ValueFromJson(e, out.emplace_back());
  } else {
    out = j.get<T>();
  }
}

template <class S>
nlohmann::json StructToJson(const S& s) {
  nlohmann::json out = kPositionalJson<S> ? nlohmann::json::array() : nlohmann::json::object();
  types::ForEachField<S>([&](const auto& f) {
    const auto& v = s.*f.member;
    if constexpr (kPositionalJson<S>) {
      out.push_back(ValueToJson(v));
    } else if (!(f.flags & types::kOmitWhenEmpty) || !types::IsEmptyValue(v)) {
      out[f.name] = ValueToJson(v);
    }
  });
  return out;
}

template <class S>
void StructFromJson(const nlohmann::json& j, S& s) {
  size_t i = 0;
  types::ForEachField<S>([&](const auto& f) {
    if constexpr (kPositionalJson<S>) {
      if (i < j.size()) ValueFromJson(j.at(i), s.*f.member);
      ++i;
    } else if ((f.flags & types::kRequired) || j.contains(f.name)) {
      ValueFromJson(j.at(f.name), s.*f.member);  // absent and required: throws
    }
  });
}

}  // namespace dflash::store
