#include "app/logging.h"

#include <time.h>

#include <chrono>
#include <cstdio>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/log_fields.h"

namespace dflash::app {
namespace {

// RFC 3339 UTC with microseconds: 2024-05-01T12:00:00.123456Z.
std::string Rfc3339(spdlog::log_clock::time_point t) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  const time_t secs = static_cast<time_t>(micros / 1000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(micros % 1000000));
  return buf;
}

}  // namespace

void JsonLogFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  nlohmann::ordered_json j;
  j["time"] = Rfc3339(msg.time);
  const auto level = spdlog::level::to_string_view(msg.level);
  j["level"] = std::string(level.data(), level.size());
  j["message"] = std::string(msg.payload.data(), msg.payload.size());
  for (const LogField& f : CurrentLogFields()) {
    if (f.key == "time" || f.key == "level" || f.key == "message") continue;
    if (f.is_number) {
      j[f.key] = f.number;
    } else {
      j[f.key] = f.text;
    }
  }
  // Invalid UTF-8 (e.g. a path with odd bytes) is replaced, never thrown.
  const std::string line =
      j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  dest.append(line.data(), line.data() + line.size());
}

std::unique_ptr<spdlog::formatter> JsonLogFormatter::clone() const {
  return std::make_unique<JsonLogFormatter>();
}

absl::Status ConfigureLogging(const std::string& level, const std::string& format) {
  const spdlog::level::level_enum lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("log level '", level, "' is not one of trace, debug, info, warn, error"));
  }
  if (format != "text" && format != "json") {
    return absl::InvalidArgumentError(
        absl::StrCat("log format '", format, "' is not one of text, json"));
  }
  if (format == "json") {
    // Plain (uncoloured) stdout like the text format, one object per line.
    auto logger = std::make_shared<spdlog::logger>(
        "dflash-evald", std::make_shared<spdlog::sinks::stdout_sink_mt>());
    logger->set_formatter(std::make_unique<JsonLogFormatter>());
    spdlog::set_default_logger(logger);
  }
  spdlog::set_level(lvl);
  spdlog::flush_on(spdlog::level::info);
  return absl::OkStatus();
}

}  // namespace dflash::app
