// The server's log setup (app/logging.h): the flags' refusals and the JSON
// line format, with the thread's structured fields as keys.
#include "app/logging.h"

#include <spdlog/details/log_msg.h>
#include <spdlog/spdlog.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/log_fields.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::app {
namespace {

using ::dflash::testing::StatusIs;

// One record through the JSON formatter, parsed back.
nlohmann::json FormatOne(spdlog::level::level_enum level, const std::string& text,
                         std::chrono::system_clock::time_point when) {
  spdlog::details::log_msg msg(spdlog::source_loc{}, "dflash-evald", level, text);
  msg.time = when;
  spdlog::memory_buf_t buf;
  JsonLogFormatter().format(msg, buf);
  const std::string line(buf.data(), buf.size());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one object per line: " << line;
  return nlohmann::json::parse(line);
}

TEST(LoggingTest, RefusesUnknownLevelAndFormat) {
  EXPECT_THAT(ConfigureLogging("loud", "text"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "log level 'loud' is not one of trace, debug, info, warn, error"));
  EXPECT_THAT(
      ConfigureLogging("info", "xml"),
      StatusIs(absl::StatusCode::kInvalidArgument, "log format 'xml' is not one of text, json"));
  EXPECT_OK(ConfigureLogging("warn", "text"));
  EXPECT_EQ(spdlog::get_level(), spdlog::level::warn);
  EXPECT_OK(ConfigureLogging("off", "json"));
  EXPECT_EQ(spdlog::get_level(), spdlog::level::off);
}

TEST(LoggingTest, JsonLineHasTimeLevelMessage) {
  // 2024-05-01T12:00:00.123456Z
  const auto when = std::chrono::system_clock::time_point(
      std::chrono::microseconds(int64_t{1714564800} * 1000000 + 123456));
  const nlohmann::json j = FormatOne(spdlog::level::warn, "disk \"full\"", when);
  EXPECT_EQ(j["time"], "2024-05-01T12:00:00.123456Z");
  EXPECT_EQ(j["level"], "warning");
  EXPECT_EQ(j["message"], "disk \"full\"");
  EXPECT_EQ(j.size(), 3u);
}

TEST(LoggingTest, JsonLineCarriesTheThreadsFields) {
  ScopedLogFields outer({{"job_id", "ev-1"}, {"duration_ms", int64_t{42}}});
  // A field may not replace the record's own keys.
  ScopedLogFields inner({{"peer", "ipv4:127.0.0.1:5"}, {"level", "spoofed"}});
  const nlohmann::json j =
      FormatOne(spdlog::level::info, "done", std::chrono::system_clock::time_point{});
  EXPECT_EQ(j["time"], "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(j["level"], "info");
  EXPECT_EQ(j["job_id"], "ev-1");
  EXPECT_EQ(j["duration_ms"], 42);
  EXPECT_EQ(j["peer"], "ipv4:127.0.0.1:5");
  EXPECT_EQ(j.size(), 6u);
}

TEST(LoggingTest, InvalidUtf8IsReplacedNotThrown) {
  const nlohmann::json j = FormatOne(spdlog::level::err, std::string("path /x/\xff\xfe.pt"),
                                     std::chrono::system_clock::time_point{});
  EXPECT_EQ(j["message"], "path /x/\xEF\xBF\xBD\xEF\xBF\xBD.pt");
}

}  // namespace
}  // namespace dflash::app
