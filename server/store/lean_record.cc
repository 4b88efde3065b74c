#include "store/lean_record.h"

namespace dflash::store {
namespace {

constexpr absl::string_view kKey = "\"per_sample\"";

// Index just past the string literal that starts at `i` (a quote).
size_t SkipString(absl::string_view s, size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return s.size();
}

size_t SkipSpace(absl::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
  return i;
}

// Index just past the array that starts at `i` ('['); npos if it never ends.
size_t SkipArray(absl::string_view s, size_t i) {
  int depth = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '"') {
      i = SkipString(s, i);
      continue;
    }
    if (c == '[' || c == '{') ++depth;
    if ((c == ']' || c == '}') && --depth == 0) return i + 1;
    ++i;
  }
  return absl::string_view::npos;
}

}  // namespace

std::string WithoutPerSample(absl::string_view json) {
  std::string out;
  out.reserve(json.size());
  size_t i = 0, copied = 0;
  while (i < json.size()) {
    if (json[i] != '"') {
      ++i;
      continue;
    }
    const size_t end = SkipString(json, i);
    // A key is a string followed by ':'; only then can an array follow.
    const size_t colon = SkipSpace(json, end);
    if (json.substr(i, end - i) == kKey && colon < json.size() && json[colon] == ':') {
      const size_t open = SkipSpace(json, colon + 1);
      if (open < json.size() && json[open] == '[') {
        const size_t close = SkipArray(json, open);
        if (close == absl::string_view::npos) return std::string(json);
        out.append(json.data() + copied, open - copied);
        out.append("[]");
        copied = i = close;
        continue;
      }
    }
    i = end;
  }
  out.append(json.data() + copied, json.size() - copied);
  return out;
}

}  // namespace dflash::store
