// File: web_server.h
// The web view on HTTP (cpp-httplib, Debian's libcpp-httplib-dev): binds
// HOST:PORT, serves WebSite's pages from its own threads (std::thread's
// default stacks: libtorch's static TLS rules out small ones, see
// metrics/http_exposer.h), GET and HEAD only. With a token check every
// request needs "Authorization: Bearer TOKEN" (401 otherwise).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "web/web_site.h"

namespace dflash::web {

class WebServer {
 public:
  // true when the bearer token may read; null: no tokens required.
  using TokenCheck = std::function<bool(absl::string_view token)>;

  // Binds `listen` (HOST:PORT; port 0 picks a free one) and serves `site`,
  // which must outlive the server. InvalidArgument for a malformed listen,
  // Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<WebServer>> Start(const std::string& listen, WebSite& site,
                                                          const TokenCheck& tokens);
  ~WebServer();  // stops serving and joins the threads

  int port() const;

 private:
  struct Impl;
  explicit WebServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dflash::web
