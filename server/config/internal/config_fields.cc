#include "config/internal/config_fields.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "config/internal/key_table.h"

namespace dflash::config::internal {
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

absl::StatusOr<const Json*> TopLevel::Find(absl::string_view key) const {
  RETURN_IF_ERROR(
      CheckReadable(key, {KeyKind::kImplemented, KeyKind::kDraft, KeyKind::kDFlash2Draft}));
  auto it = root_.find(std::string(key));
  if (it == root_.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::StatusOr<bool> TopLevel::Int(const std::string& key, int64_t* out) const {
  RETURN_IF_ERROR(Find(key).status());
  return ReadInt(root_, key, key, out);
}

absl::StatusOr<bool> TopLevel::Double(const std::string& key, double* out) const {
  RETURN_IF_ERROR(Find(key).status());
  return ReadDouble(root_, key, key, out);
}

absl::StatusOr<bool> TopLevel::Bool(const std::string& key, bool* out) const {
  RETURN_IF_ERROR(Find(key).status());
  return ReadBool(root_, key, key, out);
}

absl::StatusOr<bool> TopLevel::String(const std::string& key, std::string* out) const {
  RETURN_IF_ERROR(Find(key).status());
  return ReadString(root_, key, key, out);
}

absl::Status TopLevel::RequireInt(const std::string& key, int64_t* out) const {
  RETURN_IF_ERROR(Find(key).status());
  return internal::RequireInt(root_, key, key, out);
}

}  // namespace dflash::config::internal
