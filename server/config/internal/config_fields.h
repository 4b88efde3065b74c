// File: config_fields.h
// Internal to config/: typed readers for config.json fields, shared by the
// drafter config reader and its draft keys. `where` is the dotted path used
// in messages ("rope_parameters.factor"). Absent or null fields leave *out
// untouched and return false; a present field of the wrong type is
// InvalidArgument naming the field, the type wanted and what was found.
//
// Top-level keys are read through TopLevel, which reads only the keys the
// key table (key_table.h) declares as read:
//   TopLevel top(root);
//   RETURN_IF_ERROR(top.RequireInt("hidden_size", &cfg.hidden_size));
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dflash::config::internal {

using Json = nlohmann::json;

absl::StatusOr<bool> ReadInt(const Json& obj, const std::string& key, const std::string& where,
                             int64_t* out);
absl::StatusOr<bool> ReadDouble(const Json& obj, const std::string& key, const std::string& where,
                                double* out);
absl::StatusOr<bool> ReadBool(const Json& obj, const std::string& key, const std::string& where,
                              bool* out);
absl::StatusOr<bool> ReadString(const Json& obj, const std::string& key, const std::string& where,
                                std::string* out);

// "config field 'X' is missing".
absl::Status Missing(const std::string& where);
// ReadInt, and Missing when absent.
absl::Status RequireInt(const Json& obj, const std::string& key, const std::string& where,
                        int64_t* out);
// "config field 'X' must be positive; got V".
absl::Status RequirePositive(const std::string& where, int64_t v);

// config.json's top level as the readers see it. Every lookup first checks
// that the key table declares the key as read (implemented or a draft key):
// one it does not is an InternalError naming the key (our bug), so no key is
// read without being on the implemented-keys list.
class TopLevel {
 public:
  explicit TopLevel(const Json& root) : root_(root) {}

  // The whole object, to walk its keys (CheckTopLevelKeys).
  const Json& json() const { return root_; }

  // The value at `key`; nullptr when absent or null.
  absl::StatusOr<const Json*> Find(absl::string_view key) const;

  // ReadInt ... ReadString and RequireInt of `key` (named `key` in messages).
  absl::StatusOr<bool> Int(const std::string& key, int64_t* out) const;
  absl::StatusOr<bool> Double(const std::string& key, double* out) const;
  absl::StatusOr<bool> Bool(const std::string& key, bool* out) const;
  absl::StatusOr<bool> String(const std::string& key, std::string* out) const;
  absl::Status RequireInt(const std::string& key, int64_t* out) const;

 private:
  const Json& root_;
};

}  // namespace dflash::config::internal
