// File: web_server.cc
#include "web/web_server.h"

#include <httplib.h>

#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace dflash::web {

struct WebServer::Impl {
  httplib::Server server;
  std::thread thread;
  int port = 0;
};

namespace {

void Reply(const WebReply& r, httplib::Response& res) {
  res.status = r.status;
  res.set_content(r.body, r.content_type);
  // Pages are read-only views of live data: never cached, never framed; a
  // running job's page may fetch its own twin (connect-src 'self').
  res.set_header("Cache-Control", "no-store");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
                 "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'");
}

}  // namespace

absl::StatusOr<std::unique_ptr<WebServer>> WebServer::Start(const std::string& listen,
                                                            WebSite& site,
                                                            const TokenCheck& tokens) {
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-listen '", listen, "' is not HOST:PORT (port 0 picks a free one)"));
  }
  const std::string host =
      listen.substr(0, colon) == "localhost" ? "127.0.0.1" : listen.substr(0, colon);
  auto impl = std::make_unique<Impl>();
  httplib::Server& s = impl->server;
  s.set_pre_routing_handler([tokens](const httplib::Request& req, httplib::Response& res) {
    if (!tokens) return httplib::Server::HandlerResponse::Unhandled;
    const std::string header = req.get_header_value("Authorization");  // a copy
    absl::string_view auth = header;
    if (absl::ConsumePrefix(&auth, "Bearer ") && tokens(absl::StripAsciiWhitespace(auth))) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    Reply({401, "text/plain; charset=utf-8",
           "401: this server requires a bearer token (Authorization: Bearer TOKEN)\n"},
          res);
    res.set_header("WWW-Authenticate", "Bearer");
    return httplib::Server::HandlerResponse::Handled;
  });
  s.Get(".*", [&site](const httplib::Request& req, httplib::Response& res) {
    std::multimap<std::string, std::string> query(req.params.begin(), req.params.end());
    Reply(site.Handle(req.path, query), res);
  });
  // What the library answers itself (an over-long URI: 414, a bad request
  // line or an unknown method: 400, POST and the other known methods: 404
  // in cpp-httplib 0.11) also gets a readable page.
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    Reply({res.status, "text/html; charset=utf-8",
           ErrorView(res.status, absl::StrCat("the request was refused (HTTP ", res.status, ")"))
               .html},
          res);
  });
  const int bound = port == 0 ? s.bind_to_any_port(host) : (s.bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    return absl::UnavailableError(absl::StrCat("--http-listen '", listen, "': cannot bind"));
  }
  impl->port = bound;
  impl->thread = std::thread([srv = &impl->server] { srv->listen_after_bind(); });
  return std::unique_ptr<WebServer>(new WebServer(std::move(impl)));
}

WebServer::WebServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

WebServer::~WebServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int WebServer::port() const {
  return impl_->port;
}

}  // namespace dflash::web
