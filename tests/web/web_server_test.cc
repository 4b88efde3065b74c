// The web view on HTTP (web/web_server.h), on a real loopback port with
// cpp-httplib's client, over a site of a fake job service and core: pages
// and their headers, the decoded path and query reaching the site, HEAD,
// what the library refuses itself (another method, an over-long URI) as a
// readable page, the bearer token check, the listen address's errors, and
// the port closed once the server is gone.
#include "web/web_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "fakes/fake_eval_core.h"
#include "fakes/fake_job_service.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"
#include "web/view_records.h"
#include "web/web_site.h"

namespace dflash::web {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using json = nlohmann::json;

constexpr char kCsp[] =
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

class WebServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    jobs_.Answer([](auto& a) { a.record = dflash::testing::Job("ev-1", "r", 3, 2.5); });
  }

  // Starts serving on `listen` (ASSERTs it did); `tokens` as Start takes it.
  void Serve(const std::string& listen = "127.0.0.1:0", const WebServer::TokenCheck& tokens = {}) {
    absl::StatusOr<std::unique_ptr<WebServer>> s = WebServer::Start(listen, site_, tokens);
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    ASSERT_GT(server_->port(), 0);
  }
  // A client of the server (timeouts so a broken server fails, not hangs).
  std::unique_ptr<httplib::Client> Client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    c->set_connection_timeout(5, 0);
    c->set_read_timeout(10, 0);
    return c;
  }

  dflash::testing::FakeJobService jobs_;
  dflash::testing::FakeEvalCore core_;
  WebSite site_{jobs_, core_};
  std::unique_ptr<WebServer> server_;
};

TEST_F(WebServerTest, ServesTheSitesPagesWithTheirHeaders) {
  Serve();
  const httplib::Result html = Client()->Get("/jobs/ev-1");
  ASSERT_TRUE(html) << httplib::to_string(html.error());
  EXPECT_EQ(html->status, 200);
  EXPECT_EQ(html->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_THAT(html->body, HasSubstr("<title>Job ev-1 - dflash-evald</title>"));
  EXPECT_EQ(html->get_header_value("Cache-Control"), "no-store");
  EXPECT_EQ(html->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(html->get_header_value("Content-Security-Policy"), kCsp);

  const httplib::Result twin = Client()->Get("/api/jobs/ev-1");
  ASSERT_TRUE(twin);
  EXPECT_EQ(twin->status, 200);
  EXPECT_EQ(twin->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(json::parse(twin->body)["id"], "ev-1");
  EXPECT_EQ(twin->get_header_value("Cache-Control"), "no-store");
}

TEST_F(WebServerTest, TheSiteGetsTheDecodedPathAndTheQuery) {
  Serve();
  auto client = Client();
  ASSERT_TRUE(client->Get("/jobs/ev%2F1%20x"));
  EXPECT_THAT(jobs_.calls().got, ElementsAre("ev/1 x"));

  const httplib::Result bad = client->Get("/api/runs/r?step=%3Cx%3E");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["error"], "step '<x>' is not an integer");
  EXPECT_EQ(bad->get_header_value("Content-Type"), "application/json");

  ASSERT_TRUE(client->Get("/api/compare?jobs=a,b&allow_recipe_mismatch"));
  ASSERT_TRUE(client->Get("/api/compare?jobs=c,d"));
  const auto compared = jobs_.calls().compared;
  ASSERT_EQ(compared.size(), 2u);
  EXPECT_THAT(compared[0].first, ElementsAre("a", "b"));
  EXPECT_TRUE(compared[0].second.allow_recipe_mismatch);
  EXPECT_THAT(compared[1].first, ElementsAre("c", "d"));
  EXPECT_FALSE(compared[1].second.allow_recipe_mismatch);
}

TEST_F(WebServerTest, HeadAnswersTheStatusWithoutABody) {
  Serve();
  const httplib::Result ok = Client()->Head("/jobs/ev-1");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "");
  EXPECT_EQ(ok->get_header_value("Content-Type"), "text/html; charset=utf-8");
  const httplib::Result missing = Client()->Head("/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

// What cpp-httplib refuses before the site sees it still gets a page.
TEST_F(WebServerTest, WhatTheLibraryRefusesGetsAReadablePage) {
  Serve();
  const httplib::Result post = Client()->Post("/", "x=1", "application/x-www-form-urlencoded");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 404);  // no handler for POST: cpp-httplib answers 404
  EXPECT_EQ(post->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_THAT(post->body, HasSubstr("<p class=\"error\">the request was refused (HTTP 404)</p>"));
  EXPECT_EQ(post->get_header_value("Cache-Control"), "no-store");

  const httplib::Result long_uri = Client()->Get("/" + std::string(9000, 'a'));
  ASSERT_TRUE(long_uri);
  EXPECT_EQ(long_uri->status, 414);
  EXPECT_THAT(long_uri->body, HasSubstr("<title>Error 414 - dflash-evald</title>"));
  EXPECT_THAT(long_uri->body, HasSubstr("the request was refused (HTTP 414)"));
  // A method cpp-httplib does not know.
  httplib::Request brew;
  brew.method = "BREW";
  brew.path = "/jobs/ev-1";
  const httplib::Result unknown = Client()->send(brew);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 400);
  EXPECT_THAT(unknown->body, HasSubstr("the request was refused (HTTP 400)"));
  EXPECT_THAT(jobs_.calls().got, IsEmpty());
  // And it keeps serving.
  const httplib::Result after = Client()->Get("/jobs/ev-1");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

TEST_F(WebServerTest, WithTokensEveryRequestNeedsABearerToken) {
  Serve("127.0.0.1:0", [](absl::string_view token) { return token == "s3cret"; });
  const auto get = [&](const std::string& authorization) {
    httplib::Headers headers;
    if (!authorization.empty()) headers.emplace("Authorization", authorization);
    return Client()->Get("/api/jobs/ev-1", headers);
  };
  for (const std::string auth : {"", "Bearer wrong", "Basic s3cret", "bearer s3cret", "Bearer"}) {
    const httplib::Result refused = get(auth);
    ASSERT_TRUE(refused) << auth;
    EXPECT_EQ(refused->status, 401) << auth;
    EXPECT_EQ(refused->body,
              "401: this server requires a bearer token (Authorization: Bearer TOKEN)\n");
    EXPECT_EQ(refused->get_header_value("WWW-Authenticate"), "Bearer");
    EXPECT_EQ(refused->get_header_value("Content-Type"), "text/plain; charset=utf-8");
    EXPECT_EQ(refused->get_header_value("Cache-Control"), "no-store");
  }
  EXPECT_THAT(jobs_.calls().got, IsEmpty());  // refused before the site
  for (const std::string auth : {"Bearer s3cret", "Bearer   s3cret  "}) {
    const httplib::Result ok = get(auth);
    ASSERT_TRUE(ok) << auth;
    EXPECT_EQ(ok->status, 200) << auth;
  }
  EXPECT_EQ(jobs_.calls().got.size(), 2u);
}

TEST_F(WebServerTest, AListenThatIsNotHostPortIsInvalidArgument) {
  for (const std::string listen : {"nope", "127.0.0.1", "127.0.0.1:", "127.0.0.1:x", "127.0.0.1:-1",
                                   "127.0.0.1:65536", "127.0.0.1:1.5"}) {
    EXPECT_THAT(WebServer::Start(listen, site_, {}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         Eq(absl::StrCat("--http-listen '", listen,
                                         "' is not HOST:PORT (port 0 picks a free one)"))));
  }
}

// A port another socket (without SO_REUSEPORT) listens on cannot be bound.
TEST_F(WebServerTest, APortInUseIsUnavailable) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string listen = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
  EXPECT_THAT(WebServer::Start(listen, site_, {}),
              StatusIs(absl::StatusCode::kUnavailable,
                       Eq(absl::StrCat("--http-listen '", listen, "': cannot bind"))));
  ::close(fd);
}

TEST_F(WebServerTest, LocalhostIsTheLoopbackAddressAndAStoppedServerClosesItsPort) {
  Serve("localhost:0");
  auto client = Client();
  const httplib::Result ok = client->Get("/jobs/ev-1");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  server_.reset();  // stops, closes the listening socket and joins
  const httplib::Result gone = client->Get("/jobs/ev-1");
  EXPECT_FALSE(gone);
}

}  // namespace
}  // namespace dflash::web
