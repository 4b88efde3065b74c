// File: listen_policy.h
// Who may reach the server: listening on anything but loopback without a way
// to tell callers apart (a token file, or TLS that checks client
// certificates) is refused unless --insecure-allow-remote says so.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dflash::app {

// True for 127.0.0.0/8, ::1 and localhost (with or without brackets, port or
// scheme "ipv4:"/"ipv6:"); false for anything else, wildcards included.
bool IsLoopbackListen(absl::string_view listen);

struct ListenSecurity {
  bool has_tokens = false;        // --auth-token-file
  bool has_client_certs = false;  // --tls-client-ca (mutual TLS)
  bool insecure_allow_remote = false;
};

// Ok, or FailedPrecondition saying why `listen` is refused and what to add.
absl::Status CheckListen(absl::string_view listen, const ListenSecurity& security);

}  // namespace dflash::app
