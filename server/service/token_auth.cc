#include "service/token_auth.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace dflash::service {
namespace {

constexpr size_t kMinTokenLength = 16;

// Ok if `token` equals any of `tokens`; every candidate is compared, so the
// time does not tell which (or whether one) matched.
bool AnyEquals(const std::vector<std::string>& tokens, absl::string_view token) {
  bool found = false;
  for (const std::string& t : tokens) found |= ConstantTimeEquals(t, token);
  return found;
}

}  // namespace

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  // Always walks `b` (the caller's input), so timing reveals no prefix.
  volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < b.size(); ++i) {
    const unsigned char x = a.empty() ? 0 : static_cast<unsigned char>(a[i % a.size()]);
    diff = diff | (x ^ static_cast<unsigned char>(b[i]));
  }
  return diff == 0;
}

absl::StatusOr<TokenAuth> TokenAuth::FromText(absl::string_view text, absl::string_view where) {
  TokenAuth auth;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    const bool read_only = absl::ConsumePrefix(&line, "ro:");
    line = absl::StripAsciiWhitespace(line);
    // The token itself never goes into a message.
    if (line.size() < kMinTokenLength) {
      return absl::InvalidArgumentError(
          absl::StrCat("token on line ", line_no, " of ", where, " has ", line.size(),
                       " characters; expected at least ", kMinTokenLength));
    }
    for (char c : line) {
      if (c < 0x21 || c > 0x7e) {
        return absl::InvalidArgumentError(
            absl::StrCat("token on line ", line_no, " of ", where,
                         " has a character that cannot go in a header; expected printable ASCII"));
      }
    }
    (read_only ? auth.read_only_ : auth.full_).emplace_back(line);
  }
  if (auth.full_.empty() && auth.read_only_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("token file ", where, " has no tokens; expected one token per line"));
  }
  return auth;
}

absl::StatusOr<TokenAuth> TokenAuth::FromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read token file '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  return FromText(text.str(), absl::StrCat("'", path, "'"));
}

bool TokenAuth::IsReadOnlyMethod(absl::string_view method) {
  static constexpr absl::string_view kReadOnly[] = {
      "GetServerInfo", "ValidateCheckpoint", "ListResources", "GetEval",
      "ListEvals",     "WatchEval",          "CompareEvals",  "ExportProfile"};
  for (absl::string_view m : kReadOnly) {
    if (m == method) return true;
  }
  return false;
}

bool TokenAuth::MayRead(absl::string_view token) const {
  return AnyEquals(full_, token) || AnyEquals(read_only_, token);
}

absl::Status TokenAuth::Check(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                              absl::string_view method) const {
  const auto unauthenticated = [] {
    return absl::UnauthenticatedError("missing or invalid bearer token");
  };
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return unauthenticated();
  absl::string_view value(it->second.data(), it->second.size());
  // The scheme is case-insensitive (RFC 7235).
  if (value.size() < 7 || !absl::EqualsIgnoreCase(value.substr(0, 7), "bearer ")) {
    return unauthenticated();
  }
  const absl::string_view token = absl::StripAsciiWhitespace(value.substr(7));
  const bool full = AnyEquals(full_, token);
  const bool read_only = AnyEquals(read_only_, token);
  if (full) return absl::OkStatus();
  if (!read_only) return unauthenticated();
  if (IsReadOnlyMethod(method)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("read-only token cannot call ", method));
}

}  // namespace dflash::service
