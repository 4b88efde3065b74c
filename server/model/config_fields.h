// File: config_fields.h
// Typed readers for config.json fields, shared by the drafter config and its
// draft keys. `where` is the dotted path used in messages
// ("rope_parameters.factor"). Absent or null fields leave *out untouched and
// return false; a present field of the wrong type is InvalidArgument naming
// the field, the type wanted and what was found.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dflash::model::config_fields {

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

}  // namespace dflash::model::config_fields
