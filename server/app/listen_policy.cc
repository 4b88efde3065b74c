#include "app/listen_policy.h"

#include <arpa/inet.h>

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace dflash::app {
namespace {

// The host part of HOST:PORT, [V6]:PORT, or a bare host.
std::string HostOf(absl::string_view listen) {
  absl::ConsumePrefix(&listen, "ipv4:");
  absl::ConsumePrefix(&listen, "ipv6:");
  if (!listen.empty() && listen[0] == '[') {
    const size_t close = listen.find(']');
    if (close == absl::string_view::npos) return std::string(listen);
    return std::string(listen.substr(1, close - 1));
  }
  const size_t colon = listen.rfind(':');
  // More than one ':' without brackets is a bare IPv6 address.
  if (colon != absl::string_view::npos && listen.find(':') == colon) {
    return std::string(listen.substr(0, colon));
  }
  return std::string(listen);
}

}  // namespace

bool IsLoopbackListen(absl::string_view listen) {
  const std::string host = absl::AsciiStrToLower(HostOf(listen));
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    static const in6_addr kLoopback = IN6ADDR_LOOPBACK_INIT;
    if (IN6_ARE_ADDR_EQUAL(&v6, &kLoopback)) return true;
    // ::ffff:127.x.y.z
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

absl::Status CheckListen(absl::string_view listen, const ListenSecurity& security) {
  if (IsLoopbackListen(listen) || security.has_tokens || security.has_client_certs ||
      security.insecure_allow_remote) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "refusing to listen on ", listen,
      ": it is not a loopback address and no authentication is configured, so anyone who "
      "can reach it could load files from the data roots and run jobs on this machine; "
      "give --auth-token-file (and --tls-cert/--tls-key), or --tls-client-ca for mutual "
      "TLS, or listen on 127.0.0.1, or pass --insecure-allow-remote if the network is "
      "trusted"));
}

}  // namespace dflash::app
