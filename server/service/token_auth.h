// File: token_auth.h
// Bearer-token authentication for DrafterEval (--auth-token-file). The file
// holds one token per line; a line "ro:TOKEN" is a read-only token, which may
// call GetServerInfo, ValidateCheckpoint, ListResources, GetEval, ListEvals,
// WatchEval, CompareEvals and ExportProfile but nothing that loads, unloads,
// submits, calibrates, cancels or evaluates. Blank lines and lines starting with '#' are ignored;
// surrounding whitespace is trimmed. Clients send `authorization: Bearer
// TOKEN`. Tokens are compared in constant time and never logged. Health and
// reflection are separate services and stay open.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <grpcpp/support/string_ref.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dflash::service {

class TokenAuth {
 public:
  // Reads the token file. InvalidArgument for a file without tokens or with
  // a token shorter than 16 characters; NotFound when it cannot be read.
  static absl::StatusOr<TokenAuth> FromFile(const std::string& path);
  // From the file's text (tests).
  static absl::StatusOr<TokenAuth> FromText(absl::string_view text, absl::string_view where);

  // Ok when the call's metadata carries a token allowed to call `method`;
  // Unauthenticated "missing or invalid bearer token" when no token matches;
  // PermissionDenied "read-only token cannot call METHOD" for a read-only
  // token on a method that changes state.
  absl::Status Check(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                     absl::string_view method) const;

  // Whether `token` is one of the file's (full or read-only): may it read?
  // The web view asks this of an "Authorization: Bearer" header.
  bool MayRead(absl::string_view token) const;

  // The methods a read-only token may call.
  static bool IsReadOnlyMethod(absl::string_view method);

  size_t full_tokens() const { return full_.size(); }
  size_t read_only_tokens() const { return read_only_.size(); }

 private:
  std::vector<std::string> full_, read_only_;
};

// Compares in time that depends only on the lengths, not on where they differ.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

}  // namespace dflash::service
