// File: field_fill.h
// Walks a field table (types/eval_result_fields.h, eval_options_fields.h)
// to set every field to a distinct value that is not its default, and to
// compare two structs field by field, naming the first path that differs.
// What the store's and the proto's table tests run over, so a field added
// to a table is covered without a test edit.
//
//   types::EvalResult r;
//   int64_t k = 1;
//   FillFields(r, k);
//   ExpectFieldsEqual(ResultFromJson(ResultToJson(r)), r, "result");
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "types/eval_options_fields.h"
#include "types/eval_result_fields.h"

namespace dflash::testing {

template <class T>
void FillFields(T& v, int64_t& k) {
  namespace t = ::dflash::types;
  if constexpr (t::kHasFieldTable<T>) {
    t::ForEachField<T>([&](const auto& f) { FillFields(v.*f.member, k); });
  } else if constexpr (std::is_same_v<T, t::SamplingSetting>) {
    v = {0.5 + static_cast<double>(k++), 0.9, 3, t::ProposalPolicy::kArgmax, false, "vllm"};
  } else if constexpr (std::is_same_v<T, std::optional<t::Interval>>) {
    v = t::Interval{static_cast<double>(k) + 0.25, static_cast<double>(k) + 0.75};
    ++k;
  } else if constexpr (t::IsOptional<T>::value) {
    FillFields(v.emplace(), k);
  } else if constexpr (t::IsVector<T>::value) {
    v.resize(2);
    for (auto& e : v) FillFields(e, k);
  } else if constexpr (std::is_same_v<T, bool>) {
    v = true;
  } else if constexpr (std::is_integral_v<T>) {
    v = static_cast<T>(k++);
  } else if constexpr (std::is_floating_point_v<T>) {
    v = static_cast<T>(k++) + 0.5;
  } else {
    v = "s" + std::to_string(k++);
  }
}

template <class T>
void ExpectFieldsEqual(const T& got, const T& want, const std::string& path) {
  namespace t = ::dflash::types;
  if constexpr (t::kHasFieldTable<T>) {
    t::ForEachField<T>([&](const auto& f) {
      ExpectFieldsEqual(got.*f.member, want.*f.member, path + "." + f.name);
    });
  } else if constexpr (std::is_same_v<T, t::SamplingSetting>) {
    EXPECT_EQ(got.temperature, want.temperature) << path;
    EXPECT_EQ(got.top_p, want.top_p) << path;
    EXPECT_EQ(got.top_k, want.top_k) << path;
    EXPECT_EQ(got.policy, want.policy) << path;
    EXPECT_EQ(got.truncate_draft, want.truncate_draft) << path;
    EXPECT_EQ(got.engine, want.engine) << path;
  } else if constexpr (std::is_same_v<T, std::optional<t::Interval>>) {
    ASSERT_EQ(got.has_value(), want.has_value()) << path;
    if (!want) return;
    EXPECT_EQ(got->lo, want->lo) << path;
    EXPECT_EQ(got->hi, want->hi) << path;
  } else if constexpr (t::IsOptional<T>::value) {
    ASSERT_EQ(got.has_value(), want.has_value()) << path;
    if (want) ExpectFieldsEqual(*got, *want, path);
  } else if constexpr (t::IsTableVector<T>::value) {
    ASSERT_EQ(got.size(), want.size()) << path;
    for (size_t i = 0; i < want.size(); ++i) {
      ExpectFieldsEqual(got[i], want[i], path + "[" + std::to_string(i) + "]");
    }
  } else {
    EXPECT_EQ(got, want) << path;
  }
}

}  // namespace dflash::testing
