// File: sample_metadata.cc
#include "data/sample_metadata.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"

namespace dflash::data {
namespace {

using json = nlohmann::json;

absl::Status Bad(absl::string_view path, int line, absl::string_view defect) {
  return absl::InvalidArgumentError(
      absl::StrCat("sample metadata '", path, "' line ", line, ": ", defect));
}

absl::StatusOr<std::string> Text(const json& doc, const char* field) {
  auto it = doc.find(field);
  if (it == doc.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", field, "' must be a string; got ", it->dump()));
  }
  return it->get<std::string>();
}

}  // namespace

absl::StatusOr<std::map<int64_t, SampleMetadata>> ParseSampleMetadata(absl::string_view text,
                                                                      absl::string_view path) {
  std::map<int64_t, SampleMetadata> out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    const json doc = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_object()) {
      return Bad(path, line_no, "is not a JSON object");
    }
    auto index = doc.find("index");
    if (index == doc.end() || !index->is_number_integer() || index->get<int64_t>() < 0) {
      return Bad(path, line_no,
                 absl::StrCat("needs an integer 'index' >= 0 (the capture file's sample index); "
                              "got ",
                              index == doc.end() ? "none" : index->dump()));
    }
    SampleMetadata m;
    for (auto [field, slot] : {std::pair{"category", &m.category}, {"language", &m.language}}) {
      absl::StatusOr<std::string> v = Text(doc, field);
      if (!v.ok()) return Bad(path, line_no, v.status().message());
      *slot = *std::move(v);
    }
    if (auto it = doc.find("thinking"); it != doc.end() && !it->is_null()) {
      if (!it->is_boolean()) {
        return Bad(path, line_no,
                   absl::StrCat("'thinking' must be true or false; got ", it->dump()));
      }
      m.thinking = it->get<bool>() ? "on" : "off";
    }
    const int64_t i = index->get<int64_t>();
    if (!out.emplace(i, std::move(m)).second) {
      return Bad(path, line_no, absl::StrCat("sample ", i, " is listed twice"));
    }
  }
  return out;
}

absl::StatusOr<std::map<int64_t, SampleMetadata>> ReadSampleMetadata(absl::string_view root,
                                                                     absl::string_view relative) {
  namespace fs = std::filesystem;
  const fs::path file =
      fs::path(std::string(root)) /
      (relative.empty() ? std::string(kSampleMetadataFile) : std::string(relative));
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    if (relative.empty()) return std::map<int64_t, SampleMetadata>();
    return absl::NotFoundError(absl::StrCat("sample metadata '", file.string(),
                                            "' (named by the manifest's 'sample_metadata') is "
                                            "not a readable file"));
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read sample metadata '", file.string(), "'"));
  }
  return ParseSampleMetadata(text.str(), file.string());
}

}  // namespace dflash::data
