#include "formats/safetensors_header.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/shape_text.h"
#include "nlohmann/json.hpp"

namespace dflash::formats {
namespace {

using Json = nlohmann::json;

// A valid header nests three deep (object -> tensor -> shape). Refusing
// deeper input early keeps hostile headers from costing stack or memory.
constexpr int kMaxJsonDepth = 16;

absl::Status Invalid(absl::string_view tensor, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("tensor '", tensor, "': ", what));
}

// "a string", "a number", ... for messages about a wrong JSON type.
std::string JsonKind(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

// The JSON text of a value, cut short for messages.
std::string Brief(const Json& j) {
  std::string s = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 48) s = s.substr(0, 45) + "...";
  return s;
}

// Depth of [ and { outside strings; stops counting once past the limit.
bool NestsTooDeep(absl::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

absl::StatusOr<Json> ParseJsonObject(absl::string_view text) {
  if (NestsTooDeep(text)) {
    return absl::InvalidArgumentError(
        absl::StrCat("header JSON nests deeper than ", kMaxJsonDepth, " levels"));
  }
  Json j;
  try {
    j = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at ...".
    std::string what = e.what();
    if (auto pos = what.find("] "); pos != std::string::npos) what.erase(0, pos + 2);
    return absl::InvalidArgumentError(absl::StrCat("header is not valid JSON: ", what));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("header is not valid JSON: ", e.what()));
  }
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("header JSON is ", JsonKind(j),
                     "; expected an object of tensor name -> {dtype, shape, data_offsets}"));
  }
  return j;
}

// A JSON integer in [0, max]; nullopt-like false otherwise.
bool AsNonNegative(const Json& j, uint64_t max, uint64_t* out) {
  if (j.is_number_unsigned()) {
    uint64_t v = j.get<uint64_t>();
    if (v > max) return false;
    *out = v;
    return true;
  }
  if (j.is_number_integer()) {
    int64_t v = j.get<int64_t>();
    if (v < 0) return false;
    *out = static_cast<uint64_t>(v);
    return *out <= max;
  }
  return false;
}

absl::StatusOr<std::map<std::string, std::string>> ParseMetadata(const Json& j) {
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'__metadata__' is ", JsonKind(j), "; expected an object of strings"));
  }
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat("'__metadata__' key '", key, "' holds ",
                                                     JsonKind(value), "; expected a string"));
    }
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

absl::StatusOr<SafetensorsEntry> ParseEntry(const std::string& name, const Json& j,
                                            uint64_t data_bytes) {
  if (!j.is_object()) {
    return Invalid(name, absl::StrCat("is ", JsonKind(j),
                                      "; expected an object with dtype, shape, data_offsets"));
  }
  SafetensorsEntry e;
  e.name = name;

  auto dtype_it = j.find("dtype");
  if (dtype_it == j.end()) return Invalid(name, "has no \"dtype\"");
  if (!dtype_it->is_string()) {
    return Invalid(name, absl::StrCat("\"dtype\" is ", JsonKind(*dtype_it),
                                      "; expected a string such as \"F32\""));
  }
  absl::StatusOr<DType> dtype = DTypeFromName(dtype_it->get<std::string>());
  if (!dtype.ok()) return Invalid(name, dtype.status().message());
  e.dtype = *dtype;

  auto shape_it = j.find("shape");
  if (shape_it == j.end()) return Invalid(name, "has no \"shape\"");
  if (!shape_it->is_array()) {
    return Invalid(name, absl::StrCat("\"shape\" is ", JsonKind(*shape_it),
                                      "; expected a list of non-negative integers"));
  }
  // numel * element size must fit in int64 (TensorInfo::nbytes, at::Tensor).
  const uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t bytes = static_cast<uint64_t>(DTypeSize(e.dtype));
  bool overflow = false;
  for (size_t i = 0; i < shape_it->size(); ++i) {
    const Json& d = (*shape_it)[i];
    uint64_t v = 0;
    if (!AsNonNegative(d, kMax, &v)) {
      return Invalid(name, absl::StrCat("\"shape\" entry ", i, " is ", Brief(d),
                                        "; expected a non-negative integer"));
    }
    e.shape.push_back(static_cast<int64_t>(v));
    if (v != 0 && bytes > kMax / v)
      overflow = true;
    else
      bytes *= v;
  }
  // A zero dimension makes the product 0 whatever came before it.
  if (overflow && std::find(e.shape.begin(), e.shape.end(), 0) == e.shape.end()) {
    return Invalid(name, absl::StrCat("shape ", ShapeText(e.shape), " of ", DTypeName(e.dtype),
                                      " needs more than 2^63 bytes"));
  }
  if (overflow) bytes = 0;

  auto off_it = j.find("data_offsets");
  if (off_it == j.end()) return Invalid(name, "has no \"data_offsets\"");
  if (!off_it->is_array() || off_it->size() != 2 ||
      !AsNonNegative((*off_it)[0], std::numeric_limits<uint64_t>::max(), &e.begin) ||
      !AsNonNegative((*off_it)[1], std::numeric_limits<uint64_t>::max(), &e.end)) {
    return Invalid(name, absl::StrCat("\"data_offsets\" is ", Brief(*off_it),
                                      "; expected [begin, end] of non-negative integers"));
  }
  std::string offsets = absl::StrCat("data_offsets [", e.begin, ", ", e.end, "]");
  if (e.begin > e.end) return Invalid(name, absl::StrCat(offsets, " end before they begin"));
  if (e.end > data_bytes) {
    return Invalid(name,
                   absl::StrCat(offsets, " end past the data section (", data_bytes, " bytes)"));
  }
  if (e.end - e.begin != bytes) {
    return Invalid(
        name, absl::StrCat(offsets, " hold ", e.end - e.begin, " bytes; shape ", ShapeText(e.shape),
                           " of ", DTypeName(e.dtype), " needs ", bytes));
  }
  return e;
}

// Sorted ranges must tile [0, data_bytes) exactly (zero-size tensors may sit
// on any boundary).
absl::Status CheckCoverage(const std::vector<SafetensorsEntry>& entries, uint64_t data_bytes) {
  uint64_t covered = 0;
  const SafetensorsEntry* prev = nullptr;
  for (const SafetensorsEntry& e : entries) {
    if (e.begin < covered) {
      return absl::InvalidArgumentError(absl::StrCat("tensors '", prev->name, "' [", prev->begin,
                                                     ", ", prev->end, "] and '", e.name, "' [",
                                                     e.begin, ", ", e.end, "] overlap"));
    }
    if (e.begin > covered) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bytes [", covered, ", ", e.begin, ") of the data section belong to no tensor (",
          prev ? absl::StrCat("between '", prev->name, "' and '", e.name, "'")
               : absl::StrCat("before '", e.name, "'"),
          ")"));
    }
    covered = e.end;
    prev = &e;
  }
  if (covered < data_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bytes [", covered, ", ", data_bytes, ") of the data section belong to no tensor",
        prev ? absl::StrCat(" (after '", prev->name, "')") : std::string()));
  }
  return absl::OkStatus();
}

absl::Status ParseInto(absl::string_view header_json, uint64_t data_bytes,
                       std::vector<SafetensorsEntry>* entries,
                       std::map<std::string, std::string>* metadata) {
  absl::StatusOr<Json> j = ParseJsonObject(header_json);
  if (!j.ok()) return j.status();
  for (const auto& [key, value] : j->items()) {
    if (key == "__metadata__") {
      absl::StatusOr<std::map<std::string, std::string>> m = ParseMetadata(value);
      if (!m.ok()) return m.status();
      if (metadata != nullptr) *metadata = std::move(*m);
      continue;
    }
    absl::StatusOr<SafetensorsEntry> e = ParseEntry(key, value, data_bytes);
    if (!e.ok()) return e.status();
    entries->push_back(std::move(*e));
  }
  std::sort(entries->begin(), entries->end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
            });
  return CheckCoverage(*entries, data_bytes);
}

}  // namespace

absl::StatusOr<std::vector<SafetensorsEntry>> ParseSafetensorsHeader(absl::string_view header_json,
                                                                     uint64_t data_section_bytes) {
  std::vector<SafetensorsEntry> entries;
  absl::Status st = ParseInto(header_json, data_section_bytes, &entries, nullptr);
  if (!st.ok()) return st;
  return entries;
}

absl::StatusOr<SafetensorsLayout> ParseSafetensorsBytes(absl::string_view file) {
  if (file.size() < 8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "file is ", file.size(),
        " bytes; a safetensors file starts with an 8-byte little-endian header length"));
  }
  SafetensorsLayout layout;
  const auto* p = reinterpret_cast<const unsigned char*>(file.data());
  for (int i = 7; i >= 0; --i) layout.header_bytes = (layout.header_bytes << 8) | p[i];
  if (layout.header_bytes > kMaxSafetensorsHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat("header length ", layout.header_bytes,
                                                   " exceeds the limit of ",
                                                   kMaxSafetensorsHeaderBytes, " bytes"));
  }
  if (layout.header_bytes > file.size() - 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("header length ", layout.header_bytes, " runs past the end of the file (8 + ",
                     layout.header_bytes, " > ", file.size(), " bytes)"));
  }
  layout.data_start = 8 + layout.header_bytes;
  layout.data_bytes = file.size() - layout.data_start;
  absl::Status st = ParseInto(file.substr(8, layout.header_bytes), layout.data_bytes,
                              &layout.entries, &layout.metadata);
  if (!st.ok()) return st;
  return layout;
}

}  // namespace dflash::formats
