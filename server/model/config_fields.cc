#include "model/config_fields.h"

#include "absl/strings/str_cat.h"

namespace dflash::model::config_fields {
namespace {

// The one reader: `ok` says whether a present value has the wanted type.
template <typename T, typename Check>
absl::StatusOr<bool> Read(const Json& obj, const std::string& key, const std::string& where,
                          const char* wanted, Check ok, T* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return false;
  if (!ok(*it)) {
    return absl::InvalidArgumentError(absl::StrCat("config field '", where, "' must be ", wanted,
                                                   "; got ", it->type_name(), " ", it->dump()));
  }
  *out = it->get<T>();
  return true;
}

}  // namespace

absl::StatusOr<bool> ReadInt(const Json& obj, const std::string& key, const std::string& where,
                             int64_t* out) {
  return Read(
      obj, key, where, "an integer", [](const Json& j) { return j.is_number_integer(); }, out);
}

absl::StatusOr<bool> ReadDouble(const Json& obj, const std::string& key, const std::string& where,
                                double* out) {
  return Read(
      obj, key, where, "a number", [](const Json& j) { return j.is_number(); }, out);
}

absl::StatusOr<bool> ReadBool(const Json& obj, const std::string& key, const std::string& where,
                              bool* out) {
  return Read(
      obj, key, where, "a boolean", [](const Json& j) { return j.is_boolean(); }, out);
}

absl::StatusOr<bool> ReadString(const Json& obj, const std::string& key, const std::string& where,
                                std::string* out) {
  return Read(
      obj, key, where, "a string", [](const Json& j) { return j.is_string(); }, out);
}

absl::Status Missing(const std::string& where) {
  return absl::InvalidArgumentError(absl::StrCat("config field '", where, "' is missing"));
}

absl::Status RequireInt(const Json& obj, const std::string& key, const std::string& where,
                        int64_t* out) {
  auto found = ReadInt(obj, key, where, out);
  if (!found.ok()) return found.status();
  if (!*found) return Missing(where);
  return absl::OkStatus();
}

absl::Status RequirePositive(const std::string& where, int64_t v) {
  if (v <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field '", where, "' must be positive; got ", v));
  }
  return absl::OkStatus();
}

}  // namespace dflash::model::config_fields
