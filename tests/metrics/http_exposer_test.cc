// HttpExposer (metrics/http_exposer.h): the listen addresses it refuses and
// why, and its three answers (200 with the rendered text at /metrics, 404
// elsewhere, 405 for anything but GET), byte for byte over a real socket.
#include "metrics/http_exposer.h"

#include <atomic>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/http_get.h"
#include "test_util/status_matchers.h"

namespace dflash::metrics {
namespace {

using ::dflash::testing::HttpExchange;
using ::dflash::testing::HttpGet;
using ::dflash::testing::StatusIs;
using ::testing::Eq;
using ::testing::StartsWith;

std::string Answer(const std::string& status, const std::string& type, const std::string& body) {
  return absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", type,
                      "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body);
}

class HttpExposerTest : public ::testing::Test {
 protected:
  std::unique_ptr<HttpExposer> Start(HttpExposer::RenderFn render) {
    absl::StatusOr<std::unique_ptr<HttpExposer>> e =
        HttpExposer::Start("localhost:0", std::move(render));
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *std::move(e) : nullptr;
  }
};

TEST_F(HttpExposerTest, AddressWithoutPortIsInvalidArgument) {
  for (const std::string listen :
       {"localhost", "localhost:", "localhost:x9", "localhost:-1", "localhost:65536"}) {
    EXPECT_THAT(HttpExposer::Start(listen, [] { return ""; }).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         Eq("metrics address '" + listen + "' is not HOST:PORT")))
        << listen;
  }
}

TEST_F(HttpExposerTest, HostNameIsInvalidArgument) {
  EXPECT_THAT(HttpExposer::Start("metrics.example:9100", [] { return ""; }).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("metrics address 'metrics.example:9100': host 'metrics.example' is "
                          "not an IPv4 address")));
  EXPECT_THAT(HttpExposer::Start("[::1]:9100", [] { return ""; }).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("metrics address '[::1]:9100': host '[::1]' is not an IPv4 address")));
}

TEST_F(HttpExposerTest, BusyPortIsUnavailable) {
  std::unique_ptr<HttpExposer> first = Start([] { return ""; });
  ASSERT_NE(first, nullptr);
  const std::string listen = absl::StrCat("127.0.0.1:", first->port());
  EXPECT_THAT(HttpExposer::Start(listen, [] { return ""; }).status(),
              StatusIs(absl::StatusCode::kUnavailable,
                       Eq("cannot serve metrics on '" + listen + "': Address already in use")));
}

TEST_F(HttpExposerTest, MetricsPathAnswersTheRenderedText) {
  std::atomic<int> renders{0};
  std::unique_ptr<HttpExposer> e = Start([&renders] {
    ++renders;
    return absl::StrCat("scrape ", renders.load(), "\n");
  });
  ASSERT_NE(e, nullptr);
  EXPECT_GT(e->port(), 0);
  const std::string type = "text/plain; version=0.0.4; charset=utf-8";
  EXPECT_EQ(HttpGet(e->port(), "/metrics"), Answer("200 OK", type, "scrape 1\n"));
  // A query string is not part of the path; every scrape renders afresh.
  EXPECT_EQ(HttpGet(e->port(), "/metrics?name[]=up"), Answer("200 OK", type, "scrape 2\n"));
  EXPECT_EQ(renders.load(), 2);
}

TEST_F(HttpExposerTest, OtherPathsAreNotFound) {
  std::atomic<int> renders{0};
  std::unique_ptr<HttpExposer> e = Start([&renders] {
    ++renders;
    return std::string("x");
  });
  ASSERT_NE(e, nullptr);
  const std::string not_found = Answer("404 Not Found", "text/plain", "metrics are at /metrics\n");
  EXPECT_EQ(HttpGet(e->port(), "/"), not_found);
  EXPECT_EQ(HttpGet(e->port(), "/metrics/extra"), not_found);
  EXPECT_EQ(HttpGet(e->port(), "/metricsx"), not_found);
  EXPECT_EQ(renders.load(), 0);
}

TEST_F(HttpExposerTest, AnythingButGetIsMethodNotAllowed) {
  std::unique_ptr<HttpExposer> e = Start([] { return std::string("x"); });
  ASSERT_NE(e, nullptr);
  const std::string not_allowed = Answer("405 Method Not Allowed", "text/plain", "GET only\n");
  EXPECT_EQ(HttpExchange(e->port(), "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n"),
            not_allowed);
  EXPECT_EQ(HttpExchange(e->port(), "get /metrics HTTP/1.1\r\n\r\n"), not_allowed);
  // The endpoint keeps serving after them.
  EXPECT_THAT(HttpGet(e->port(), "/metrics"), StartsWith("HTTP/1.1 200 OK\r\n"));
}

TEST_F(HttpExposerTest, StopsWhenDestroyed) {
  std::unique_ptr<HttpExposer> e = Start([] { return std::string("x"); });
  ASSERT_NE(e, nullptr);
  const int port = e->port();
  e.reset();
  EXPECT_EQ(HttpGet(port, "/metrics"), "");
}

}  // namespace
}  // namespace dflash::metrics
