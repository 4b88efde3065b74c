// File: logging.h
// The server's log output: spdlog to stdout in `text` (human) or `json` (one
// object per line for log shippers: time, level, message, and the thread's
// structured fields from common/log_fields.h: request_id, peer, method,
// code, duration_ms, job_id, ...).
#pragma once

#include <memory>
#include <string>

#include <spdlog/formatter.h>

#include "absl/status/status.h"

namespace dflash::app {

// Formats one record as a JSON object on one line.
class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

// format: "text" or "json"; level: trace, debug, info, warn, error.
absl::Status ConfigureLogging(const std::string& level, const std::string& format);

}  // namespace dflash::app
